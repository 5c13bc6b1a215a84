// CPU rungs of reduce.
//   cpu_naive: one running fp32 accumulator walked over the data on one thread (a serial
//              dependency chain: one add per FP-add latency).
//   cpu_simd:  many independent accumulators (vector lanes) per thread and threads over rows or
//              chunks, combined at the end: the adds overlap and memory bandwidth is the limit.
#include <cmath>
#include <omp.h>
#include <vector>

#include "ops/cpu_math.h"
#include "ops/cpu_variant.h"
#include "ops/reduce/reduce.h"

namespace kl {

namespace {
using cpu::to_float;

template <class T> void naive(const ReduceParams& p, const Args& a) {
  const int64_t rows = p.rows, cols = p.cols;
  const bool is_max = p.is_max, total = p.total;
  const T* x = a.in[0].as<T>();
  float* y = a.out[0].as<float>();
  float acc = is_max ? -INFINITY : 0.0f;
  for (int64_t i = 0; i < rows; ++i) {
    if (!total) acc = is_max ? -INFINITY : 0.0f;
    for (int64_t j = 0; j < cols; ++j) acc = is_max ? std::fmax(acc, to_float(x[i * cols + j])) : acc + to_float(x[i * cols + j]);
    if (!total) y[i] = acc;
  }
  if (total) y[0] = acc;
}

// The largest of a span (vmax keeps the scalar loop's order of operands: the element where either
// is NaN).
template <class T> float pair_max(const T* x, int64_t n) {
  const auto max = [](cpu::Vec a, cpu::Vec b) { return cpu::vmax(a, b); };
  float r = cpu::hmax(cpu::pair_fold(x, n, cpu::vset(-INFINITY), max, max));
  for (int64_t j = n / cpu::kPair * cpu::kPair; j < n; ++j) r = cpu::vmax(r, to_float(x[j]));
  return r;
}

template <class T> float reduce_span(const T* x, int64_t n, bool is_max) {
  // In pairs of vectors, a 16-bit span converted as load_pair reads it (F16C for fp16 where the
  // level has it). A loop left to the compiler vectorised fp16 through the software conversion,
  // which held avx2's fp16 at 11.9 ms against bf16's 7.6 (16384 x 8192).
  return is_max ? pair_max(x, n) : cpu::pair_sum<false>(x, n);
}

template <class T> void simd(const ReduceParams& p, const Args& a) {
  const int64_t rows = p.rows, cols = p.cols;
  const bool is_max = p.is_max, total = p.total;
  const T* x = a.in[0].as<T>();
  float* y = a.out[0].as<float>();
  if (!total) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < rows; ++i) y[i] = reduce_span(x + i * cols, cols, is_max);
    return;
  }
  const int64_t n = rows * cols, chunk = 1 << 16;
  const int64_t chunks = (n + chunk - 1) / chunk;
  std::vector<float> part(static_cast<size_t>(chunks));
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) part[c] = reduce_span(x + c * chunk, std::min(chunk, n - c * chunk), is_max);
  y[0] = reduce_span(part.data(), chunks, is_max);
}
void run_naive(const ReduceParams& p, const Args& a) { cpu::with_float_type(p.x, [&](auto t) { naive<decltype(t)>(p, a); }); }
void run_simd(const ReduceParams& p, const Args& a) { cpu::with_float_type(p.x, [&](auto t) { simd<decltype(t)>(p, a); }); }
}  // namespace

std::vector<Variant> KL_CPU_ISA::reduce_cpu_variants() {
  return {cpu_variant("reduce", "cpu_naive", "one running fp32 accumulator on one thread: a serial chain of dependent adds", run_naive),
          cpu_variant("reduce", "cpu_simd",
                      "independent accumulators in vector lanes and threads over rows or chunks, combined at the end: bandwidth-limited",
                      run_simd)};
}

}  // namespace kl
