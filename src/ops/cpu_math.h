// Small helpers for the CPU variants: typed element conversion and a vectorisable exp.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <immintrin.h>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernelab/dtype.h"
#include "kernelab/error.h"
#include "kernelab/tensor.h"

namespace kl::cpu {

struct Half { uint16_t bits; };
struct BHalf { uint16_t bits; };

inline float to_float(float x) { return x; }
inline float to_float(Half x) { return f16_to_float(x.bits); }
inline float to_float(BHalf x) {  // bf16 is the top half of a float: exact by a shift
  uint32_t u = static_cast<uint32_t>(x.bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
template <class T> T from_float(float f);
template <> inline float from_float<float>(float f) { return f; }
template <> inline Half from_float<Half>(float f) { return Half{float_to_f16(f)}; }
template <> inline BHalf from_float<BHalf>(float f) { return BHalf{float_to_bf16(f)}; }

// Calls fn(T{}) with the storage type of a floating dtype the CPU variants take.
template <class Fn> void with_float_type(DType t, Fn&& fn) {
  switch (t) {
    case DType::f32: fn(float{}); return;
    case DType::f16: fn(Half{}); return;
    case DType::bf16: fn(BHalf{}); return;
    default: bad_input("the CPU variants take fp32, fp16 and bf16, not " + std::string(dtype_name(t)));
  }
}

// A float tensor's (or fp16/bf16 tensor's) elements as floats, in storage order.
inline std::vector<float> to_floats(const Tensor& t) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  with_float_type(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = t.as<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = to_float(p[i]);
  });
  return out;
}

// x . y over n floats, in SIMD lanes of partial sums (another order than one running sum, as a GPU's).
inline float dot(const float* x, const float* y, int64_t n) {
  float s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t c = 0; c < n; ++c) s += x[c] * y[c];
  return s;
}

// exp(x) for float, branch-free so loops over it vectorise: x = n ln2 + r, |r| <= ln2/2,
// exp(r) by a degree-6 polynomial, 2^n built in the exponent bits: relative error 6.3e-7 on [-10, 10] and
// 3.8e-6 on [-80, 80] (measured against std::exp every 0.001, with FMA and without).
// max/min as compares: they vectorise (std::fmax is a libm call with NaN rules).
inline float vmax(float a, float b) { return a > b ? a : b; }
inline float vmin(float a, float b) { return a < b ? a : b; }

// a * b + c: one instruction where the build has FMA; without it (a generic x86-64 build) std::fma
// is libm's correctly rounded emulation, and softmax on an H200 host's 16 cores ran at 4% of triad.
inline float madd(float a, float b, float c) {
#if defined(__FMA__)
  return std::fma(a, b, c);
#else
  return a * b + c;
#endif
}

inline float fast_exp(float x) {
  x = vmin(vmax(x, -87.0f), 88.0f);
  const float round_magic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float n = (x * 1.44269504088896341f + round_magic) - round_magic;
  const float r = madd(n, -0.693145751953125f, madd(n, -1.428606765330187e-06f, x));  // n * hi is exact either way
  float p = 1.0f / 720;
  p = madd(p, r, 1.0f / 120);
  p = madd(p, r, 1.0f / 24);
  p = madd(p, r, 1.0f / 6);
  p = madd(p, r, 0.5f);
  p = madd(p, r, 1.0f);
  p = madd(p, r, 1.0f);
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, 4);
  return p * scale;
}

// erfc(x), branch-free so loops over it vectorise: Numerical Recipes' erfcc (Press et al., 2nd ed.,
// section 6.2: a Chebyshev fit, fractional error under 1.2e-7), its exp by fast_exp, and
// erfc(x) = 2 - erfc(-x) below zero. std::erfc is a scalar libm call: bias_gelu's fused CPU rung ran at
// 2% of triad on it.
inline float fast_erfc(float x) {
  const float z = x < 0 ? -x : x, t = 1.0f / madd(0.5f, z, 1.0f);
  float q = madd(0.17087277f, t, -0.82215223f);
  q = madd(q, t, 1.48851587f);
  q = madd(q, t, -1.13520398f);
  q = madd(q, t, 0.27886807f);
  q = madd(q, t, -0.18628806f);
  q = madd(q, t, 0.09678418f);
  q = madd(q, t, 0.37409196f);
  q = madd(q, t, 1.00002368f);
  const float tail = t * fast_exp(madd(t, q, -1.26551223f) - z * z);
  return x < 0 ? 2.0f - tail : tail;
}

// dst[0, n) = src with non-temporal stores where dst is 64-byte aligned: the lines go to memory
// without first being read in, which a normal store's write-allocate costs (a third more
// traffic for a copy). Call stream_fence() before other threads read dst.
inline void stream_row(float* dst, const float* src, int64_t n) {
  int64_t j = 0;
#if defined(__AVX512F__)
  for (; j < n && (reinterpret_cast<uintptr_t>(dst + j) & 63) != 0; ++j) dst[j] = src[j];
  for (; j + 16 <= n; j += 16) _mm512_stream_ps(dst + j, _mm512_loadu_ps(src + j));
#elif defined(__AVX__)
  for (; j < n && (reinterpret_cast<uintptr_t>(dst + j) & 31) != 0; ++j) dst[j] = src[j];
  for (; j + 8 <= n; j += 8) _mm256_stream_ps(dst + j, _mm256_loadu_ps(src + j));
#endif
  for (; j < n; ++j) dst[j] = src[j];
}

inline void stream_fence() { _mm_sfence(); }

// Writes a row computed in fp32: streamed when the storage is fp32, converted otherwise.
template <class T> void write_row(T* dst, const float* src, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    stream_row(dst, src, n);
  } else {
    for (int64_t j = 0; j < n; ++j) dst[j] = from_float<T>(src[j]);
  }
}

}  // namespace kl::cpu
