// CPU rungs of layernorm and rmsnorm.
//   cpu_naive: unfused: the residual sum is written to memory and read back, then each row is
//              read three times (mean, variance, normalise) on one thread.
//   cpu_fused: one row at a time held in L1: x (and residual) read from memory once, h and y
//              written once (fp32 y with streaming stores, no write-allocate read), the passes
//              over the row vectorised, the next row prefetched into L2 while this row's y is
//              written, rows spread over cores.
#include <cmath>
#include <vector>

#include "ops/cpu_math.h"
#include "ops/cpu_variant.h"
#include "ops/norm/norm.h"

// GCC 12's AVX-512 headers start vectors from a self-initialised "undefined" value, which
// -Wmaybe-uninitialized reports once they are inlined here (cpu::write_row's store16).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

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

template <class T> void fused(const NormParams& p, const Args& a) {
  const Inputs s = inputs_of(p);
  const T* x = a.in[0].as<T>();
  const T* gamma = a.in[1].as<T>();
  const T* beta = s.layer ? a.in[2].as<T>() : nullptr;
  const T* res = s.residual ? a.in.back().as<T>() : nullptr;
  T* y = a.out[0].as<T>();
  T* h = s.residual ? a.out[1].as<T>() : nullptr;
  const int64_t n = s.cols;
  std::vector<float> g(static_cast<size_t>(n)), b(static_cast<size_t>(n), 0.0f);
  for (int64_t j = 0; j < n; ++j) g[j] = to_float(gamma[j]);
  if (beta)
    for (int64_t j = 0; j < n; ++j) b[j] = to_float(beta[j]);
#pragma omp parallel
  {
    std::vector<float> buf(static_cast<size_t>(n)), out(cpu::kRowChunk);
#pragma omp for schedule(static)
    for (int64_t i = 0; i < s.rows; ++i) {
      const T* xr = x + i * n;
      T* yr = y + i * n;
      // The row in fp32: x itself when it is fp32 and nothing is added, else a row buffer in L1.
      const float* v = buf.data();
      if (res) {
        const T* rr = res + i * n;
        T* hr = h + i * n;
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) {
          buf[j] = to_float(xr[j]) + to_float(rr[j]);
          hr[j] = from_float<T>(buf[j]);
        }
      } else if constexpr (std::is_same_v<T, float>) {
        v = xr;
      } else {
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) buf[j] = to_float(xr[j]);
      }
      const float mean = s.layer ? cpu::sum(v, n) / static_cast<float>(n) : 0.0f;
      const float var = cpu::sum_sq_dev(v, n, mean);
      const float rstd = 1.0f / std::sqrt(var / static_cast<float>(n) + s.eps);
      // The last pass normalises a chunk at a time into L1 and writes it out (streamed when fp32)
      // while the next row's x (and residual) are asked into L2: the memory then reads under this
      // row's writes, and the next row's first pass finds its lines in L2. With the prefetches in
      // the variance pass instead, the row normalised whole before its store and the sums in one
      // accumulator, layernorm took 32-37 ms at 16384 x 8192 fp32 on 2 Zen 4 cores; this way
      // 21-26 ms (a streaming copy of the same bytes: 13-16 ms).
      const int64_t next = i + 1 < s.rows ? (i + 1) * n : -1;
      cpu::with_next_row_prefetched(next < 0 ? nullptr : x + next, n, [&](int64_t j0, int64_t j1) {
        if (res && next >= 0)
          for (int64_t k = j0; k < j1; k += 64 / int64_t(sizeof(T))) cpu::prefetch_l2(res + next + k);
#pragma omp simd
        for (int64_t j = j0; j < j1; ++j) out[j - j0] = (v[j] - mean) * rstd * g[j] + b[j];
        cpu::write_row(yr + j0, out.data(), j1 - j0);
      });
    }
    cpu::stream_fence();
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
