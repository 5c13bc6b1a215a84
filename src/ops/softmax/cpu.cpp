// CPU rungs of softmax.
//   cpu_naive: three passes over each row (max, sum of exponentials, normalise), one thread, libm exp.
//   cpu_fused: rows spread over cores; a row stays in L1 across its passes so x is read from
//              memory once, exp is a vectorised polynomial (one exp per element), the next row
//              is prefetched into L2 during this row's exps, and fp32 rows are written with
//              streaming stores (no write-allocate read of y).
#include <cmath>

#include "ops/cpu_math.h"
#include "ops/cpu_variant.h"
#include "ops/softmax/softmax.h"

// GCC 12's AVX-512 headers start vectors from a self-initialised "undefined" value, which
// -Wmaybe-uninitialized reports once they are inlined here.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

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

// One row of the fused rung from its max pass on: e = exp(scale x - m) and their sum, while the
// next row's lines are asked into L2, so that its (memory-bound) max pass finds them there and
// the memory works under this row's exps instead of after them.
template <class T> float exp_pass(const T* xr, const T* next, float* e, int64_t valid, float scale, float m) {
#if defined(__AVX2__) && defined(__FMA__)
  // On AVX2 in intrinsics (exp2_8 on x scale log2e - m log2e, as the AVX-512 row; a third less
  // time than the loop below as GCC 12 vectorises it), one prefetch a line of the next row.
  const float sc2 = scale * cpu::kLog2e, m2 = m * cpu::kLog2e;
  const __m256 sc = _mm256_set1_ps(sc2), mv = _mm256_set1_ps(m2);
  __m256 sv = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 8 <= valid; j += 8) {
    if (next && (j * int64_t(sizeof(T))) % 64 == 0) cpu::prefetch_l2(next + j);
    const __m256 v = cpu::exp2_8(_mm256_fmsub_ps(sc, cpu::load8(xr + j), mv));
    _mm256_storeu_ps(e + j, v);
    sv = _mm256_add_ps(sv, v);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, sv);
  float s = 0;
  for (float l : lanes) s += l;
  for (; j < valid; ++j) s += e[j] = cpu::exp2_scalar(std::fma(sc2, to_float(xr[j]), -m2));
  return s;
#else
  float s = 0;
  cpu::with_next_row_prefetched(next, valid, [&](int64_t j0, int64_t j1) {
    float part = 0;
#pragma omp simd reduction(+ : part)
    for (int64_t j = j0; j < j1; ++j) {
      e[j] = cpu::fast_exp(scale * to_float(xr[j]) - m);
      part += e[j];
    }
    s += part;
  });
  return s;
#endif
}

#if defined(KL_CPU_AVX512)
// On AVX-512: the same passes in intrinsics, 32 elements a step in pair order (cpu_math.h: a
// 16-bit row split into floats by a shift and an and, or vcvtph2ps, as it is read), exp2_16, one
// prefetch a line, and the normalisation fused into the store, streamed where the row is aligned
// (16-bit rows too: through write_row they were stored with a write-allocate read). The row's
// last valid % 32 elements go one at a time, in element order, in each pass.
template <class T> void fused_row_avx512(const T* xr, const T* next, float* e, T* yr, int64_t valid, int64_t cols, float scale) {
  const int64_t whole = valid / 32 * 32;
  const __m512 sc = _mm512_set1_ps(scale);
  __m512 mv[4];  // four running maxima: one would wait on vmaxps's latency every 16 elements
  for (__m512& v : mv) v = _mm512_set1_ps(-INFINITY);
  int64_t j = 0;
  for (; j + 64 <= whole; j += 64) {
    const cpu::Pair p = cpu::load_pair(xr + j), q = cpu::load_pair(xr + j + 32);
    mv[0] = _mm512_max_ps(mv[0], _mm512_mul_ps(sc, p.a)), mv[1] = _mm512_max_ps(mv[1], _mm512_mul_ps(sc, p.b));
    mv[2] = _mm512_max_ps(mv[2], _mm512_mul_ps(sc, q.a)), mv[3] = _mm512_max_ps(mv[3], _mm512_mul_ps(sc, q.b));
  }
  if (j < whole) {
    const cpu::Pair p = cpu::load_pair(xr + j);
    mv[0] = _mm512_max_ps(mv[0], _mm512_mul_ps(sc, p.a)), mv[1] = _mm512_max_ps(mv[1], _mm512_mul_ps(sc, p.b));
  }
  float mx = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(mv[0], mv[1]), _mm512_max_ps(mv[2], mv[3])));
  for (j = whole; j < valid; ++j) mx = cpu::vmax(mx, scale * to_float(xr[j]));
  // exp(scale x - max) = 2^(x scale log2e - max log2e), the exponent in one FMA. The constant's
  // rounding shifts every exponent of the row alike, which the normalisation divides out.
  const float sc2 = scale * cpu::kLog2e, mx2 = mx * cpu::kLog2e;
  const __m512 sc2v = _mm512_set1_ps(sc2), mx2v = _mm512_set1_ps(mx2);
  __m512 sa = _mm512_setzero_ps(), sb = _mm512_setzero_ps();
  for (j = 0; j < whole; j += 32) {
    if (next)
      for (int64_t k = 0; k < 32; k += 64 / int64_t(sizeof(T))) cpu::prefetch_l2(next + j + k);
    const cpu::Pair p = cpu::load_pair(xr + j);
    const __m512 ea = cpu::exp2_16(_mm512_fmsub_ps(sc2v, p.a, mx2v)), eb = cpu::exp2_16(_mm512_fmsub_ps(sc2v, p.b, mx2v));
    cpu::store_pair(e + j, {ea, eb}, false);
    sa = _mm512_add_ps(sa, ea), sb = _mm512_add_ps(sb, eb);
  }
  float sum = _mm512_reduce_add_ps(_mm512_add_ps(sa, sb));
  for (j = whole; j < valid; ++j) sum += e[j] = cpu::exp2_scalar(std::fma(sc2, to_float(xr[j]), -mx2));
  if (next)
    for (j = whole; j < cols; j += 64 / int64_t(sizeof(T))) cpu::prefetch_l2(next + j);
  const float inv = sum > 0 ? 1.0f / sum : 0.0f;  // a row masked whole (causal) is zeros
  const __m512 iv = _mm512_set1_ps(inv), zero = _mm512_setzero_ps();
  const bool stream = reinterpret_cast<uintptr_t>(yr) % 64 == 0;
  for (j = 0; j < whole; j += 32) {
    const cpu::Pair p = cpu::load_pair(e + j);
    cpu::store_pair(yr + j, {_mm512_mul_ps(p.a, iv), _mm512_mul_ps(p.b, iv)}, stream);
  }
  for (; j < valid; ++j) yr[j] = from_float<T>(e[j] * inv);
  for (; j < cols && j % 32 != 0; ++j) yr[j] = from_float<T>(0.0f);
  for (; j + 32 <= cols; j += 32) cpu::store_pair(yr + j, {zero, zero}, stream);
  for (; j < cols; ++j) yr[j] = from_float<T>(0.0f);
}
#endif

// One row of the fused rung anywhere else: the exp pass's prefetches, the rest as loops the
// compiler vectorises, the normalisation in the store.
template <class T> void fused_row_generic(const T* xr, const T* next, float* e, T* yr, int64_t valid, int64_t cols, float scale) {
  float m = -INFINITY;
#pragma omp simd reduction(max : m)
  for (int64_t j = 0; j < valid; ++j) m = cpu::vmax(m, scale * to_float(xr[j]));
  const float sum = exp_pass(xr, next, e, valid, scale, m);
  const float inv = sum > 0 ? 1.0f / sum : 0.0f;  // a row masked whole (causal) is zeros
  for (int64_t j = valid; j < cols; ++j) e[j] = 0.0f;
  cpu::write_row(yr, e, cols, inv);
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
#if defined(KL_CPU_AVX512)
      fused_row_avx512(xr, next, e.data(), y + i * cols, p.valid_cols(i), cols, scale);
#else
      fused_row_generic(xr, next, e.data(), y + i * cols, p.valid_cols(i), cols, scale);
#endif
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
