// CPU rungs of softmax.
//   cpu_naive: three passes over each row (max, sum of exponentials, normalise), one thread, libm exp.
//   cpu_fused: rows spread over cores; a row stays in L1 across its passes so x is read from
//              memory once, exp is a vectorised polynomial (one exp per element), the next row
//              is prefetched into L2 during this row's exps and stores, and y is written with streaming
//              stores (no write-allocate read), at every level in the same vector code.
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

// One row of the fused rung at every level: the passes in vectors, a pair a step (cpu_math.h: a
// 16-bit row split into floats as it is read), exp as 2^(x scale log2e - max log2e) by vexp2, the
// next row's lines asked into L2, its first half during the exps and its second during the
// normalisation (so that its memory-bound max pass finds them there; spread over both passes
// instead of the exps alone: fp32 on Zen 3, 10 alternations, median 41.2 -> 35.6 ms),
// and the normalisation fused into the store, streamed where the row is aligned (16-bit
// rows too: through a row buffer they were stored with a write-allocate read). The row's last
// valid % kPair elements go one at a time, in element order, in each pass.
template <class T> void fused_row(const T* xr, const T* next, float* e, T* yr, int64_t valid, int64_t cols, float scale) {
  using cpu::Vec, cpu::kPair;
  const int64_t whole = valid / kPair * kPair;
  const Vec sc = cpu::vset(scale);
  const auto max = [](Vec a, Vec b) { return cpu::vmax(a, b); };
  const auto scaled_max = [&](Vec m, Vec x) { return cpu::vmax(m, cpu::vmul(sc, x)); };
  float mx = cpu::hmax(cpu::pair_fold(xr, whole, cpu::vset(-INFINITY), scaled_max, max));
  int64_t j = whole;
  for (; j < valid; ++j) mx = cpu::vmax(mx, scale * to_float(xr[j]));
  // exp(scale x - max) = 2^(x scale log2e - max log2e), the exponent in one FMA. The constant's
  // rounding shifts every exponent of the row alike, which the normalisation divides out.
  const float sc2 = scale * cpu::kLog2e, mx2 = mx * cpu::kLog2e;
  const Vec sc2v = cpu::vset(sc2), mx2v = cpu::vset(mx2);
  Vec sa = cpu::vzero(), sb = cpu::vzero();
  for (j = 0; j < whole; j += kPair) {
    cpu::prefetch_lines(next, j / 2, (j + kPair) / 2);  // lines [0, whole / 2)
    const cpu::Pair p = cpu::load_pair(xr + j);
    const Vec ea = cpu::vexp2(cpu::vfms(sc2v, p.a, mx2v)), eb = cpu::vexp2(cpu::vfms(sc2v, p.b, mx2v));
    cpu::store_pair(e + j, {ea, eb}, false);
    sa = cpu::vadd(sa, ea), sb = cpu::vadd(sb, eb);
  }
  float sum = cpu::hsum(cpu::vadd(sa, sb));
  for (j = whole; j < valid; ++j) sum += e[j] = cpu::exp2_scalar(std::fma(sc2, to_float(xr[j]), -mx2));
  const float inv = sum > 0 ? 1.0f / sum : 0.0f;  // a row masked whole (causal) is zeros
  const Vec iv = cpu::vset(inv), zero = cpu::vzero();
  const bool stream = reinterpret_cast<uintptr_t>(yr) % 64 == 0;
  for (j = 0; j < whole; j += kPair) {
    cpu::prefetch_lines(next, (whole + j) / 2, (whole + j + kPair) / 2);  // lines [whole / 2, whole)
    const cpu::Pair p = cpu::load_pair(e + j);
    cpu::store_pair(yr + j, {cpu::vmul(p.a, iv), cpu::vmul(p.b, iv)}, stream);
  }
  cpu::prefetch_lines(next, whole, cols);
  for (; j < valid; ++j) yr[j] = from_float<T>(e[j] * inv);
  for (; j < cols && j % kPair != 0; ++j) yr[j] = from_float<T>(0.0f);
  for (; j + kPair <= cols; j += kPair) cpu::store_pair(yr + j, {zero, zero}, stream);
  for (; j < cols; ++j) yr[j] = from_float<T>(0.0f);
}

template <class T> void fused(const SoftmaxParams& p, const Args& a) {
  const int64_t rows = p.rows, cols = p.cols;
  const float scale = static_cast<float>(p.scale);
  const T* x = a.in[0].as<T>();
  T* y = a.out[0].as<T>();
#pragma omp parallel
  {
    std::vector<float> e(static_cast<size_t>(cols + 16));
#pragma omp for schedule(static)
    for (int64_t i = 0; i < rows; ++i) {
      const T* xr = x + i * cols;
      const T* next = i + 1 < rows ? xr + cols : nullptr;
      fused_row(xr, next, e.data(), y + i * cols, p.valid_cols(i), cols, scale);
    }
    cpu::stream_fence();
  }
}
void run_naive(const SoftmaxParams& p, const Args& a) { cpu::with_float_type(p.x, [&](auto t) { naive<decltype(t)>(p, a); }); }
void run_fused(const SoftmaxParams& p, const Args& a) { cpu::with_float_type(p.x, [&](auto t) { fused<decltype(t)>(p, a); }); }
}  // namespace

std::vector<Variant> KL_CPU_ISA::softmax_cpu_variants() {
  return {cpu_variant("softmax", "cpu_naive", "three passes over each row (max, sum of exponentials, normalise) on one thread with libm exp", run_naive),
          cpu_variant("softmax", "cpu_fused",
                      "rows spread over all cores, each row kept in L1 across its passes so x is read from memory once, exp vectorised, streaming stores",
                      run_fused)};
}

}  // namespace kl
