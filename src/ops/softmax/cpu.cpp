// CPU rungs of softmax.
//   cpu_naive: three passes over each row (max, sum of exponentials, normalise), one thread, libm exp.
//   cpu_fused: rows spread over cores; a row stays in L1 across its passes so x is read from
//              memory once, exp is a vectorised polynomial (one exp per element), and fp32
//              rows are written with streaming stores (no write-allocate read of y).
#include <cmath>

#include "ops/cpu_math.h"
#include "ops/softmax/softmax.h"

namespace kl {

namespace {
using cpu::from_float;
using cpu::to_float;

template <class T> void naive(const Problem& p, const Args& a) {
  const int64_t rows = p.dim("rows"), cols = p.dim("cols");
  const float scale = static_cast<float>(p.opt_number("scale"));
  const T* x = a.in[0].as<T>();
  T* y = a.out[0].as<T>();
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t valid = softmax_valid_cols(p, i);
    const T* xr = x + i * cols;
    T* yr = y + i * cols;
    float m = -INFINITY, s = 0;
    for (int64_t j = 0; j < valid; ++j) m = std::fmax(m, scale * to_float(xr[j]));
    for (int64_t j = 0; j < valid; ++j) s += std::exp(scale * to_float(xr[j]) - m);
    for (int64_t j = 0; j < valid; ++j) yr[j] = from_float<T>(std::exp(scale * to_float(xr[j]) - m) / s);
    for (int64_t j = valid; j < cols; ++j) yr[j] = from_float<T>(0.0f);
  }
}

template <class T> void fused(const Problem& p, const Args& a) {
  const int64_t rows = p.dim("rows"), cols = p.dim("cols");
  const float scale = static_cast<float>(p.opt_number("scale"));
  const T* x = a.in[0].as<T>();
  T* y = a.out[0].as<T>();
#pragma omp parallel
  {
    std::vector<float> e(static_cast<size_t>(cols));
#pragma omp for schedule(static)
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t valid = softmax_valid_cols(p, i);
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
}  // namespace

std::vector<Variant> softmax_cpu_variants() {
  Variant n;
  n.name = "cpu_naive";
  n.backend = Backend::cpu;
  n.note = "three passes over each row (max, sum of exponentials, normalise) on one thread with libm exp";
  n.run = [](const Problem& p, const Args& a) { cpu::with_float_type(p.dtype, [&](auto t) { naive<decltype(t)>(p, a); }); };
  Variant f;
  f.name = "cpu_fused";
  f.backend = Backend::cpu;
  f.note = "rows spread over all cores, each row kept in L1 across its passes so x is read from memory once, exp vectorised, streaming stores";
  f.run = [](const Problem& p, const Args& a) { cpu::with_float_type(p.dtype, [&](auto t) { fused<decltype(t)>(p, a); }); };
  return {n, f};
}

}  // namespace kl
