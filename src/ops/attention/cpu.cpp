// CPU rungs of attention, fp32 arithmetic on any input dtype.
//   cpu_naive: the textbook three steps per (sequence, head): S = scale Q K^T written out in full
//              (s_q x s_kv floats), a softmax over each row of S in place, then O = P V.
//   cpu_tiled: FlashAttention's schedule: a tile of 32 queries meets the keys 64 at a time, keeping a
//              running max, sum and output (the online softmax); S exists one 32 x 64 tile at a time,
//              and key tiles the mask hides from every query of the tile are skipped.
// Both spread (sequence, head, query tile) over the cores.
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


// Writes O (in the output's dtype) and the LSE of one query row.
struct Outputs {
  const AttentionParams& a;
  Tensor& o;
  float* lse;
  void row(int64_t token, int64_t h, const float* values, float row_lse) const {
    cpu::with_float_type(o.dtype(), [&](auto tag) {
      using T = decltype(tag);
      T* out = o.as<T>() + a.o_row(token, h);
      for (int64_t c = 0; c < a.head_dim_v; ++c) out[c] = from_float<T>(values[c]);
    });
    lse[h * a.total_q() + token] = row_lse;
  }
};


void naive(const AttentionParams& a, const Args& args) {
  const std::vector<float> q = cpu::to_floats(args.in[0]), k = cpu::to_floats(args.in[1]), v = cpu::to_floats(args.in[2]);
  const Outputs out{a, args.out[0], args.out[1].as<float>()};
  const float scale = float(a.scale);
#pragma omp parallel for collapse(2) schedule(dynamic)
  for (int64_t b = 0; b < a.batch; ++b)
    for (int64_t h = 0; h < a.heads; ++h) {
      const int64_t sq = a.seq_q(b), sk = a.seq_kv(b), g = h / a.group();
      std::vector<float> s(static_cast<size_t>(sq * sk)), lse(static_cast<size_t>(sq)), o(static_cast<size_t>(a.head_dim_v));
      for (int64_t i = 0; i < sq; ++i)  // S = scale Q K^T, the hidden keys at -inf
        for (int64_t j = 0; j < sk; ++j) {
          const auto [first, last] = a.visible(b, i);
          s[i * sk + j] = j >= first && j < last
                              ? scale * dot(&q[a.q_row(a.q_start[b] + i, h)], &k[a.k_row(a.kv_start[b] + j, g)], a.head_dim)
                              : -INFINITY;
        }
      for (int64_t i = 0; i < sq; ++i) {  // P = softmax(S), in place
        float* row = &s[i * sk];
        const float m = *std::max_element(row, row + sk);
        if (m == -INFINITY) {  // no key visible
          std::fill(row, row + sk, 0.0f);
          lse[i] = INFINITY;
          continue;
        }
        float sum = 0;
        for (int64_t j = 0; j < sk; ++j) sum += row[j] = std::exp(row[j] - m);
        for (int64_t j = 0; j < sk; ++j) row[j] /= sum;
        lse[i] = m + std::log(sum);
      }
      for (int64_t i = 0; i < sq; ++i) {  // O = P V
        std::fill(o.begin(), o.end(), 0.0f);
        for (int64_t j = 0; j < sk; ++j) {
          const float p = s[i * sk + j];
          if (p == 0) continue;
          const float* vr = &v[a.v_row(a.kv_start[b] + j, g)];
          for (int64_t c = 0; c < a.head_dim_v; ++c) o[c] += p * vr[c];
        }
        out.row(a.q_start[b] + i, h, o.data(), lse[i]);
      }
    }
}

constexpr int64_t kTileQ = 32, kTileK = 64;

void tiled(const AttentionParams& a, const Args& args) {
  const std::vector<float> q = cpu::to_floats(args.in[0]), k = cpu::to_floats(args.in[1]), v = cpu::to_floats(args.in[2]);
  const Outputs out{a, args.out[0], args.out[1].as<float>()};
  const float scale = float(a.scale);
  struct Task {
    int64_t b, h, i0;
  };
  std::vector<Task> tasks;
  for (int64_t b = 0; b < a.batch; ++b)
    for (int64_t h = 0; h < a.heads; ++h)
      for (int64_t i0 = 0; i0 < a.seq_q(b); i0 += kTileQ) tasks.push_back({b, h, i0});
#pragma omp parallel for schedule(dynamic)
  for (size_t t = 0; t < tasks.size(); ++t) {
    const auto [b, h, i0] = tasks[t];
    const int64_t rows = std::min(kTileQ, a.seq_q(b) - i0), g = h / a.group(), dv = a.head_dim_v;
    float m[kTileQ], l[kTileQ], s[kTileQ][kTileK];
    std::vector<float> acc(size_t(rows * dv), 0.0f);
    int64_t lo = a.seq_kv(b), hi = 0;  // the keys any query of the tile sees
    for (int64_t r = 0; r < rows; ++r) {
      const auto [first, last] = a.visible(b, i0 + r);
      if (first < last) lo = std::min(lo, first), hi = std::max(hi, last);
      m[r] = -INFINITY, l[r] = 0;
    }
    for (int64_t j0 = lo / kTileK * kTileK; j0 < hi; j0 += kTileK) {
      const int64_t cols = std::min(kTileK, a.seq_kv(b) - j0);
      for (int64_t r = 0; r < rows; ++r) {
        const auto [first, last] = a.visible(b, i0 + r);
        const float* qr = &q[a.q_row(a.q_start[b] + i0 + r, h)];
        float tile_max = -INFINITY;
        for (int64_t c = 0; c < cols; ++c) {
          const int64_t j = j0 + c;
          s[r][c] = j >= first && j < last ? scale * dot(qr, &k[a.k_row(a.kv_start[b] + j, g)], a.head_dim) : -INFINITY;
          tile_max = std::max(tile_max, s[r][c]);
        }
        if (tile_max == -INFINITY) continue;  // this query sees none of the tile
        const float m_new = std::max(m[r], tile_max), rescale = std::exp(m[r] - m_new);
        float* o = &acc[size_t(r * dv)];
        for (int64_t c = 0; c < dv; ++c) o[c] *= rescale;
        l[r] *= rescale;
        for (int64_t c = 0; c < cols; ++c) {
          if (s[r][c] == -INFINITY) continue;
          const float p = std::exp(s[r][c] - m_new);
          l[r] += p;
          const float* vr = &v[a.v_row(a.kv_start[b] + j0 + c, g)];
          for (int64_t e = 0; e < dv; ++e) o[e] += p * vr[e];
        }
        m[r] = m_new;
      }
    }
    for (int64_t r = 0; r < rows; ++r) {
      float* o = &acc[size_t(r * dv)];
      if (l[r] > 0)
        for (int64_t c = 0; c < dv; ++c) o[c] /= l[r];
      out.row(a.q_start[b] + i0 + r, h, o, l[r] > 0 ? m[r] + std::log(l[r]) : INFINITY);
    }
  }
}
}  // namespace

std::vector<Variant> KL_CPU_ISA::attention_cpu_variants() {
  return {cpu_variant<AttentionParams>("attention", "cpu_naive",
                                       "S = scale Q K^T written out in full per (sequence, head), softmax in place, then P V: "
                                       "s_q x s_kv floats of traffic per head",
                                       naive),
          cpu_variant<AttentionParams>("attention", "cpu_tiled",
                                       "the online softmax over 32 x 64 tiles: S never exists beyond one tile, and key tiles "
                                       "the mask hides are skipped",
                                       tiled)};
}

}  // namespace kl
