// CPU rungs of bias_gelu.
//   cpu_unfused: two passes through memory, as two separate kernels would run: t = x + bias
//                written to a buffer, then read back for y = gelu(t).
//   cpu_fused:   one pass: the sum never leaves a register, rows spread over cores, gelu
//                in vector code at every level, rows streamed out.
#include <cmath>
#include <vector>

#include "ops/bias_gelu/bias_gelu.h"
#include "ops/cpu_math.h"
#include "ops/cpu_variant.h"

namespace kl {

namespace {
using cpu::from_float;
using cpu::to_float;

// The unfused rung: erfc(-x) rather than 1 + erf(x), libm's. The fused one: 1 + erf(x) with
// cpu::fast_erf, a rational fit that vectorises (gelu within 1.6e-7 of the largest |gelu| in the
// check sweep; below t = -5.51 it is 0, where |gelu| < 1e-7).
inline float gelu(float t) { return 0.5f * t * std::erfc(-t * 0.70710678118654752f); }
inline float fast_gelu(float t) { return 0.5f * t * (1.0f + cpu::fast_erf(t * 0.70710678118654752f)); }

template <class T> void unfused(const BiasGeluParams& p, const Args& a) {
  const int64_t rows = p.rows, cols = p.cols;
  const T* x = a.in[0].as<T>();
  const T* b = a.in[1].as<T>();
  T* y = a.out[0].as<T>();
  T* t = static_cast<T*>(a.workspace);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) t[i * cols + j] = from_float<T>(to_float(x[i * cols + j]) + to_float(b[j]));
  for (int64_t i = 0; i < rows * cols; ++i) y[i] = from_float<T>(gelu(to_float(t[i])));
}

// A row in vectors at every level, a pair a step (cpu_math.h; the bias loaded the same way,
// so it meets its elements), gelu, each pair of outputs stored as computed, streamed where the
// row is 64-byte aligned (no write-allocate read of y; the row's last cols % kPair elements one
// at a time). Through an L1 row buffer, as the other ops once stored, it took 38.3 ms at
// 16384 x 8192 fp32 on 2 Zen 4 cores; stored as computed 26.8 ms; bf16, converted 16 lanes at a
// time and not streamed, 37.2 ms. gelu is vgelu_table on AVX-512 (14 operations a vector, at
// least as close as vgelu with its Newton step; fp32 23-25 -> 12.5 ms, bf16 23.5 -> 20.1 ms, the
// 16-bit rows bound by their conversions), vgelu's rational on AVX2, where vpermps holds 8 entries,
// and on SSE2.
template <class T> void fused_row(const T* xr, const T* next, const T* b, T* yr, int64_t cols) {
#if defined(KL_CPU_AVX512)
  const cpu::GeluTable table = cpu::gelu_table();
  const auto gelu = [&](cpu::Vec t) { return cpu::vgelu_table(t, table); };
#else
  const auto gelu = [](cpu::Vec t) { return cpu::vgelu(t); };
#endif
  const bool stream = reinterpret_cast<uintptr_t>(yr) % 64 == 0;
  int64_t j = 0;
  for (; j + cpu::kPair <= cols; j += cpu::kPair) {
    cpu::prefetch_lines(next, j, j + cpu::kPair);
    const cpu::Pair x = cpu::load_pair(xr + j), bias = cpu::load_pair(b + j);
    cpu::store_pair(yr + j, {gelu(cpu::vadd(x.a, bias.a)), gelu(cpu::vadd(x.b, bias.b))}, stream);
  }
  for (; j < cols; ++j) yr[j] = from_float<T>(fast_gelu(to_float(xr[j]) + to_float(b[j])));
}

template <class T> void fused(const BiasGeluParams& p, const Args& a) {
  const int64_t rows = p.rows, cols = p.cols;
  const T* x = a.in[0].as<T>();
  const T* b = a.in[1].as<T>();
  T* y = a.out[0].as<T>();
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (int64_t i = 0; i < rows; ++i) fused_row(x + i * cols, i + 1 < rows ? x + (i + 1) * cols : nullptr, b, y + i * cols, cols);
    cpu::stream_fence();
  }
}

void run_unfused(const BiasGeluParams& p, const Args& a) { cpu::with_float_type(p.x, [&](auto t) { unfused<decltype(t)>(p, a); }); }
void run_fused(const BiasGeluParams& p, const Args& a) { cpu::with_float_type(p.x, [&](auto t) { fused<decltype(t)>(p, a); }); }
}  // namespace

std::vector<Variant> KL_CPU_ISA::bias_gelu_cpu_variants() {
  Variant u = cpu_variant("bias_gelu", "cpu_unfused",
                          "two passes as two kernels would run them: x + bias written to memory and read back for gelu, one thread", run_unfused);
  u.workspace_bytes = [](const Problem& problem) {  // t = x + bias, (rows, cols) in x's dtype
    const BiasGeluParams& p = problem.as<BiasGeluParams>();
    return static_cast<size_t>(dtype_storage_bytes(p.x, p.n()));
  };
  return {u, cpu_variant("bias_gelu", "cpu_fused",
                         "one pass: the biased value stays in a register (a third of the traffic saved), rows over all cores, erf "
                         "as a vectorised rational fit", run_fused)};
}

}  // namespace kl
