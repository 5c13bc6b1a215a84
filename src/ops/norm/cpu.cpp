// CPU rungs of layernorm and rmsnorm.
//   cpu_naive: unfused: the residual sum is written to memory and read back, then each row is
//              read three times (mean, variance, normalise) on one thread.
//   cpu_fused: one row at a time held in L1: x (and residual) read from memory once, h and y
//              written once (streaming stores: no write-allocate read), the passes over the
//              row in vectors at every level (16-bit rows converted as read; fp16 widened once
//              where SSE2 converts it in software), the next row prefetched into L2 while this
//              row's y is written, rows spread over cores.
#include <cmath>
#include <vector>

#include "ops/cpu_math.h"
#include "ops/cpu_variant.h"
#include "ops/norm/norm.h"

namespace kl {

namespace {
using cpu::from_float;
using cpu::to_float;

struct Inputs {
  int64_t rows, cols;
  float eps;
  bool layer, residual;
};

Inputs inputs_of(const NormParams& p) { return {p.rows, p.cols, static_cast<float>(p.eps), p.layer, p.residual}; }

template <class T> void naive(const NormParams& p, const Args& a) {
  const Inputs s = inputs_of(p);
  const T* x = a.in[0].as<T>();
  const T* gamma = a.in[1].as<T>();
  const T* beta = s.layer ? a.in[2].as<T>() : nullptr;
  T* y = a.out[0].as<T>();
  if (s.residual) {  // unfused: h = x + residual goes through memory
    const T* res = a.in.back().as<T>();
    T* h = a.out[1].as<T>();
    for (int64_t i = 0; i < s.rows * s.cols; ++i) h[i] = from_float<T>(to_float(x[i]) + to_float(res[i]));
    x = h;
  }
  for (int64_t i = 0; i < s.rows; ++i) {
    const T* xr = x + i * s.cols;
    float mean = 0, var = 0;
    if (s.layer) {
      for (int64_t j = 0; j < s.cols; ++j) mean += to_float(xr[j]);
      mean /= static_cast<float>(s.cols);
    }
    for (int64_t j = 0; j < s.cols; ++j) var += (to_float(xr[j]) - mean) * (to_float(xr[j]) - mean);
    const float rstd = 1.0f / std::sqrt(var / static_cast<float>(s.cols) + s.eps);
    for (int64_t j = 0; j < s.cols; ++j)
      y[i * s.cols + j] = from_float<T>((to_float(xr[j]) - mean) * rstd * to_float(gamma[j]) + (beta ? to_float(beta[j]) : 0.0f));
  }
}

// One row at any level in pair order (cpu_math.h), a pair a step. The row's passes read x as
// stored (a 16-bit row converted as read, not copied to fp32: 8192 bf16 are 16 KB of L1, their
// fp32 copy 32 KB, all of L1 again, and the passes ran on L2 bandwidth), gamma and beta likewise;
// with a residual, pass 1 writes h and keeps the fp32 sum in buf for the other passes. The last
// pass stores each pair of outputs as computed, streamed where the row is aligned (16-bit rows
// too: through a row buffer they were stored with a write-allocate read), while the next row is
// asked into L2: the memory then reads under this row's writes, and the next row's first pass
// finds its lines in L2 (with the prefetches in the variance pass instead, the row normalised
// whole before its store and the sums in one accumulator, layernorm took 32-37 ms at 16384 x 8192
// fp32 on 2 Zen 4 cores; this way 21-26 ms, against 13-16 ms for a streaming copy of its bytes).
// A row's last cols % kPair elements go one at a time, in element order.
template <class T, class G> struct RowIo {
  const T *x, *res;
  const G *gamma, *beta;  // beta null for rmsnorm; G is float where they were widened once a call
  T *h, *y;
  const T *next_x, *next_res;  // null on the last row
};
template <class T, class G, class S> void normalise_row(const S* v, const RowIo<T, G>& r, int64_t n, float mean, float eps) {
  using cpu::Vec;
  const float rstd = 1.0f / std::sqrt(cpu::pair_sum<true>(v, n, mean) / static_cast<float>(n) + eps);
  const Vec mv = cpu::vset(mean), rv = cpu::vset(rstd);
  const bool stream = reinterpret_cast<uintptr_t>(r.y) % 64 == 0;
  const auto affine = [&](Vec x, Vec g, Vec b) { return cpu::vfma(cpu::vmul(cpu::vsub(x, mv), rv), g, b); };
  cpu::with_next_row_prefetched(r.next_x, n, [&](int64_t j0, int64_t j1) {  // j0 a multiple of 256
    cpu::prefetch_lines(r.next_res, j0, j1);
    int64_t j = j0;
    for (; j + cpu::kPair <= j1; j += cpu::kPair) {
      const cpu::Pair x = cpu::load_pair(v + j), g = cpu::load_pair(r.gamma + j);
      const cpu::Pair b = r.beta ? cpu::load_pair(r.beta + j) : cpu::Pair{cpu::vzero(), cpu::vzero()};
      cpu::store_pair(r.y + j, {affine(x.a, g.a, b.a), affine(x.b, g.b, b.b)}, stream);
    }
    for (; j < j1; ++j)
      r.y[j] = from_float<T>((to_float(v[j]) - mean) * rstd * to_float(r.gamma[j]) + (r.beta ? to_float(r.beta[j]) : 0.0f));
  });
}
// Where gamma and beta were widened (G float, T not), the row is copied to fp32 in buf by its
// first pass even without a residual.
template <class T, class G> void fused_row(const RowIo<T, G>& r, float* buf, int64_t n, const Inputs& s) {
  constexpr bool widen = !std::is_same_v<T, G>;
  if (!r.res && !widen) {
    normalise_row(r.x, r, n, s.layer ? cpu::pair_sum<false>(r.x, n) / static_cast<float>(n) : 0.0f, s.eps);
    return;
  }
  const int64_t whole = n / cpu::kPair * cpu::kPair;
  const bool stream_h = reinterpret_cast<uintptr_t>(r.h) % 64 == 0;
  cpu::Vec sum_a = cpu::vzero(), sum_b = cpu::vzero();
  for (int64_t j = 0; j < whole; j += cpu::kPair) {
    cpu::Pair t = cpu::load_pair(r.x + j);
    if (r.res) {
      const cpu::Pair u = cpu::load_pair(r.res + j);
      t = {cpu::vadd(t.a, u.a), cpu::vadd(t.b, u.b)};
      cpu::store_pair(r.h + j, t, stream_h);
    }
    cpu::store_pair(buf + j, t, false);
    sum_a = cpu::vadd(sum_a, t.a), sum_b = cpu::vadd(sum_b, t.b);
  }
  float total = cpu::hsum(cpu::vadd(sum_a, sum_b));
  for (int64_t j = whole; j < n; ++j) {
    buf[j] = r.res ? to_float(r.x[j]) + to_float(r.res[j]) : to_float(r.x[j]);
    if (r.res) r.h[j] = from_float<T>(buf[j]);
    total += buf[j];
  }
  normalise_row(static_cast<const float*>(buf), r, n, s.layer ? total / static_cast<float>(n) : 0.0f, s.eps);
}

template <class T> void fused(const NormParams& p, const Args& a) {
  const Inputs s = inputs_of(p);
  const T* x = a.in[0].as<T>();
  const T* gamma = a.in[1].as<T>();
  const T* beta = s.layer ? a.in[2].as<T>() : nullptr;
  const T* res = s.residual ? a.in.back().as<T>() : nullptr;
  T* y = a.out[0].as<T>();
  T* h = s.residual ? a.out[1].as<T>() : nullptr;
  const int64_t n = s.cols;
  const auto rows = [&]<class G>(const G* g, const G* b) {
#pragma omp parallel
    {
      std::vector<float> buf(static_cast<size_t>(res || !std::is_same_v<T, G> ? n : 0));
#pragma omp for schedule(static)
      for (int64_t i = 0; i < s.rows; ++i) {
        const bool last = i + 1 == s.rows;
        const RowIo<T, G> r{x + i * n, res ? res + i * n : nullptr, g, b, h ? h + i * n : nullptr, y + i * n,
                            last ? nullptr : x + (i + 1) * n, res && !last ? res + (i + 1) * n : nullptr};
        fused_row(r, buf.data(), n, s);
      }
      cpu::stream_fence();
    }
  };
  // fp16 at the generic level is converted in integer arithmetic (SSE2 has no F16C), about 25 ms
  // a pass over 16384 x 8192 on 2 Zen 4 cores: its rows are widened into buf once, and gamma and
  // beta once a call, instead of at each of the three passes (layernorm 171 -> 95 ms).
  if constexpr (cpu::kSoftHalf && std::is_same_v<T, cpu::Half>) {
    std::vector<float> g(static_cast<size_t>(n)), b(static_cast<size_t>(beta ? n : 0));
    for (int64_t j = 0; j < n; ++j) g[j] = to_float(gamma[j]);
    for (int64_t j = 0; j < (beta ? n : 0); ++j) b[j] = to_float(beta[j]);
    rows(g.data(), beta ? b.data() : nullptr);
  } else {
    rows(gamma, beta);
  }
}
void run_naive(const NormParams& p, const Args& a) { cpu::with_float_type(p.x, [&](auto t) { naive<decltype(t)>(p, a); }); }
void run_fused(const NormParams& p, const Args& a) { cpu::with_float_type(p.x, [&](auto t) { fused<decltype(t)>(p, a); }); }
}  // namespace

std::vector<Variant> KL_CPU_ISA::norm_cpu_variants(NormKind kind) {
  const std::string op = kind == NormKind::layer ? "layernorm" : "rmsnorm";
  return {cpu_variant(op, "cpu_naive",
                      "unfused: the residual sum goes through memory, then three reads of each row (mean, variance, normalise) on one thread",
                      run_naive),
          cpu_variant(op, "cpu_fused",
                      "residual add fused and each row kept in L1 across its passes: x read once, y and h written once (streaming stores); vectorised, all cores",
                      run_fused)};
}

}  // namespace kl
