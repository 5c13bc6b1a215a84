// CPU rungs of attention_bwd, fp32 arithmetic on any input dtype; both take P from the forward's
// LSE (P = exp(scale S - LSE), no second softmax) and D_i = dO_i . O_i, as FlashAttention does.
//   cpu_naive: per (sequence, query head) P and dP written out in full (2 s_q s_kv floats), then
//              dS = P o (dP - D) and the three products.
//   cpu_tiled: FlashAttention-2's order: for each tile of 64 keys, its dK and dV stay in registers
//              (here: a local buffer) while every query tile of the kv head's query heads passes by,
//              P and dS one 32 x 64 tile at a time; dQ gathers across key tiles.
// Both spread (sequence, kv head) over the cores: a kv head's dK and dV, and its query heads' dQ,
// belong to one thread, so nothing is added from two threads (GPU rungs use atomics for dQ).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/attention/attention.h"
#include "ops/cpu_math.h"
#include "ops/cpu_variant.h"

namespace kl {

namespace {
using cpu::from_float;
using cpu::dot;


void store(Tensor& t, const std::vector<float>& values) {
  cpu::with_float_type(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* p = t.as<T>();
    for (size_t i = 0; i < values.size(); ++i) p[i] = from_float<T>(values[i]);
  });
}


// The inputs as floats and the gradients' fp32 accumulators.
struct Work {
  const AttentionParams& a;
  std::vector<float> q, k, v, o, lse, d_o, dq, dk, dv, row_d;
  Work(const AttentionParams& p, const Args& args)
      : a(p), q(cpu::to_floats(args.in[0])), k(cpu::to_floats(args.in[1])), v(cpu::to_floats(args.in[2])),
        o(cpu::to_floats(args.in[3])), lse(cpu::to_floats(args.in[4])), d_o(cpu::to_floats(args.in[5])), dq(q.size(), 0.0f),
        dk(k.size(), 0.0f), dv(v.size(), 0.0f), row_d(lse.size(), 0.0f) {}
  // P_ij of query token tq (head h) and key token tk (kv head g), given S_ij unscaled.
  float p(int64_t h, int64_t tq, float s) const { return std::exp(float(a.scale) * s - lse[size_t(h * a.total_q() + tq)]); }
  float d(int64_t h, int64_t tq) const { return row_d[size_t(h * a.total_q() + tq)]; }
  void prepare_d() {  // D_i = dO_i . O_i (FlashAttention-2's preprocessing pass)
    for (int64_t h = 0; h < a.heads; ++h)
      for (int64_t t = 0; t < a.total_q(); ++t) row_d[size_t(h * a.total_q() + t)] = dot(&d_o[a.o_row(t, h)], &o[a.o_row(t, h)], a.head_dim_v);
  }
  void finish(const Args& args) {
    store(args.out[0], dq);
    store(args.out[1], dk);
    store(args.out[2], dv);
  }
};

void naive(const AttentionParams& a, const Args& args) {
  Work w(a, args);
  w.prepare_d();
  const float scale = float(a.scale);
#pragma omp parallel for collapse(2) schedule(dynamic)
  for (int64_t b = 0; b < a.batch; ++b)
    for (int64_t g = 0; g < a.kv_heads; ++g) {
      const int64_t sq = a.seq_q(b), sk = a.seq_kv(b);
      std::vector<float> p(static_cast<size_t>(sq * sk)), dp(static_cast<size_t>(sq * sk));
      for (int64_t h = g * a.group(); h < (g + 1) * a.group(); ++h) {
        for (int64_t i = 0; i < sq; ++i) {  // P and dP, every entry
          const int64_t tq = a.q_start[b] + i;
          const auto [first, last] = a.visible(b, i);
          for (int64_t j = 0; j < sk; ++j) {
            const int64_t tk = a.kv_start[b] + j;
            const bool seen = j >= first && j < last;
            p[i * sk + j] = seen ? w.p(h, tq, dot(&w.q[a.q_row(tq, h)], &w.k[a.k_row(tk, g)], a.head_dim)) : 0.0f;
            dp[i * sk + j] = seen ? dot(&w.d_o[a.o_row(tq, h)], &w.v[a.v_row(tk, g)], a.head_dim_v) : 0.0f;
          }
        }
        for (int64_t i = 0; i < sq; ++i)  // dS = P o (dP - D), in place of dP
          for (int64_t j = 0; j < sk; ++j) dp[i * sk + j] = p[i * sk + j] * (dp[i * sk + j] - w.d(h, a.q_start[b] + i));
        for (int64_t i = 0; i < sq; ++i) {
          const int64_t tq = a.q_start[b] + i;
          for (int64_t j = 0; j < sk; ++j) {
            const float pij = p[i * sk + j], ds = scale * dp[i * sk + j];
            if (pij == 0 && ds == 0) continue;
            const int64_t tk = a.kv_start[b] + j;
            for (int64_t c = 0; c < a.head_dim; ++c) {
              w.dq[a.q_row(tq, h) + c] += ds * w.k[a.k_row(tk, g) + c];
              w.dk[a.k_row(tk, g) + c] += ds * w.q[a.q_row(tq, h) + c];
            }
            for (int64_t c = 0; c < a.head_dim_v; ++c) w.dv[a.v_row(tk, g) + c] += pij * w.d_o[a.o_row(tq, h) + c];
          }
        }
      }
    }
  w.finish(args);
}

constexpr int64_t kTileQ = 32, kTileK = 64;

void tiled(const AttentionParams& a, const Args& args) {
  Work w(a, args);
  w.prepare_d();
  const float scale = float(a.scale);
  const int64_t d = a.head_dim, dv = a.head_dim_v;
#pragma omp parallel for collapse(2) schedule(dynamic)
  for (int64_t b = 0; b < a.batch; ++b)
    for (int64_t g = 0; g < a.kv_heads; ++g) {
      std::vector<float> dk_tile(static_cast<size_t>(kTileK * d)), dv_tile(static_cast<size_t>(kTileK * dv));
      float p[kTileQ][kTileK], ds[kTileQ][kTileK];
      for (int64_t j0 = 0; j0 < a.seq_kv(b); j0 += kTileK) {
        const int64_t cols = std::min(kTileK, a.seq_kv(b) - j0);
        std::fill(dk_tile.begin(), dk_tile.end(), 0.0f);
        std::fill(dv_tile.begin(), dv_tile.end(), 0.0f);
        for (int64_t h = g * a.group(); h < (g + 1) * a.group(); ++h)
          for (int64_t i0 = 0; i0 < a.seq_q(b); i0 += kTileQ) {
            const int64_t rows = std::min(kTileQ, a.seq_q(b) - i0);
            bool any = false;
            for (int64_t r = 0; r < rows; ++r) {  // P and dS of the tile; keys the mask hides give 0
              const int64_t tq = a.q_start[b] + i0 + r;
              const auto [first, last] = a.visible(b, i0 + r);
              for (int64_t c = 0; c < cols; ++c) {
                const int64_t j = j0 + c, tk = a.kv_start[b] + j;
                if (j < first || j >= last) {
                  p[r][c] = ds[r][c] = 0;
                  continue;
                }
                any = true;
                p[r][c] = w.p(h, tq, dot(&w.q[a.q_row(tq, h)], &w.k[a.k_row(tk, g)], d));
                ds[r][c] = p[r][c] * (dot(&w.d_o[a.o_row(tq, h)], &w.v[a.v_row(tk, g)], dv) - w.d(h, tq));
              }
            }
            if (!any) continue;  // a tile the mask hides entirely
            for (int64_t r = 0; r < rows; ++r) {
              const int64_t tq = a.q_start[b] + i0 + r;
              for (int64_t c = 0; c < cols; ++c) {
                if (p[r][c] == 0 && ds[r][c] == 0) continue;
                const int64_t tk = a.kv_start[b] + j0 + c;
                const float s = scale * ds[r][c];
                for (int64_t e = 0; e < d; ++e) {
                  dk_tile[size_t(c * d + e)] += s * w.q[a.q_row(tq, h) + e];
                  w.dq[a.q_row(tq, h) + e] += s * w.k[a.k_row(tk, g) + e];
                }
                for (int64_t e = 0; e < dv; ++e) dv_tile[size_t(c * dv + e)] += p[r][c] * w.d_o[a.o_row(tq, h) + e];
              }
            }
          }
        for (int64_t c = 0; c < cols; ++c) {
          const int64_t tk = a.kv_start[b] + j0 + c;
          std::copy_n(&dk_tile[size_t(c * d)], d, &w.dk[a.k_row(tk, g)]);
          std::copy_n(&dv_tile[size_t(c * dv)], dv, &w.dv[a.v_row(tk, g)]);
        }
      }
    }
  w.finish(args);
}
}  // namespace

std::vector<Variant> KL_CPU_ISA::attention_bwd_cpu_variants() {
  return {cpu_variant<AttentionParams>("attention_bwd", "cpu_naive",
                                       "P and dP written out in full per (sequence, head), P taken from the forward's LSE, then "
                                       "dS and the three products",
                                       naive),
          cpu_variant<AttentionParams>("attention_bwd", "cpu_tiled",
                                       "FlashAttention-2's order: a key tile's dK and dV accumulate locally while the query tiles "
                                       "pass, P and dS recomputed one 32 x 64 tile at a time",
                                       tiled)};
}

}  // namespace kl
