// CPU rungs of softmax.
//   cpu_naive: three passes over each row (max, sum of exponentials, normalise), one thread, libm exp.
//   cpu_fused: rows spread over cores; a row stays in L1 across its passes so x is read from
//              memory once, exp is a vectorised polynomial (one exp per element), and fp32
//              rows are written with streaming stores (no write-allocate read of y).
#include <cmath>

#include "ops/cpu_math.h"
#include "ops/cpu_variant.h"
#include "ops/softmax/softmax.h"

namespace kl {

namespace {
using cpu::from_float;
using cpu::to_float;

template <class T> void naive(const SoftmaxParams& p, const Args& a) {
  const int64_t rows = p.rows, cols = p.cols;
  const float scale = static_cast<float>(p.scale);
  const T* x = a.in[0].as<T>();
  T* y = a.out[0].as<T>();
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t valid = p.valid_cols(i);
    const T* xr = x + i * cols;
    T* yr = y + i * cols;
    float m = -INFINITY, s = 0;
    for (int64_t j = 0; j < valid; ++j) m = std::fmax(m, scale * to_float(xr[j]));
    for (int64_t j = 0; j < valid; ++j) s += std::exp(scale * to_float(xr[j]) - m);
    for (int64_t j = 0; j < valid; ++j) yr[j] = from_float<T>(std::exp(scale * to_float(xr[j]) - m) / s);
    for (int64_t j = valid; j < cols; ++j) yr[j] = from_float<T>(0.0f);
  }
}

template <class T> void fused(const SoftmaxParams& p, const Args& a) {
  const int64_t rows = p.rows, cols = p.cols;
  const float scale = static_cast<float>(p.scale);
  const T* x = a.in[0].as<T>();
  T* y = a.out[0].as<T>();
#pragma omp parallel
  {
    std::vector<float> e(static_cast<size_t>(cols));
#pragma omp for schedule(static)
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t valid = p.valid_cols(i);
      const T* xr = x + i * cols;
      T* yr = y + i * cols;
      float m = -INFINITY;
#pragma omp simd reduction(max : m)
      for (int64_t j = 0; j < valid; ++j) m = cpu::vmax(m, scale * to_float(xr[j]));
      float s = 0;
#pragma omp simd reduction(+ : s)
      for (int64_t j = 0; j < valid; ++j) {
        e[j] = cpu::fast_exp(scale * to_float(xr[j]) - m);
        s += e[j];
      }
      const float inv = 1.0f / s;
#pragma omp simd
      for (int64_t j = 0; j < valid; ++j) e[j] *= inv;
      for (int64_t j = valid; j < cols; ++j) e[j] = 0.0f;
      cpu::write_row(yr, e.data(), cols);
    }
    cpu::stream_fence();
  }
}
void run_naive(const SoftmaxParams& p, const Args& a) { cpu::with_float_type(p.x, [&](auto t) { naive<decltype(t)>(p, a); }); }
void run_fused(const SoftmaxParams& p, const Args& a) { cpu::with_float_type(p.x, [&](auto t) { fused<decltype(t)>(p, a); }); }
}  // namespace

std::vector<Variant> softmax_cpu_variants() {
  return {cpu_variant("softmax", "cpu_naive", "three passes over each row (max, sum of exponentials, normalise) on one thread with libm exp", run_naive),
          cpu_variant("softmax", "cpu_fused",
                      "rows spread over all cores, each row kept in L1 across its passes so x is read from memory once, exp vectorised, streaming stores",
                      run_fused)};
}

}  // namespace kl
