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
#include "ops/cpu_gelu_table.h"
#include "ops/cpu_isa.h"

// GCC 12's AVX-512 headers start vectors from a self-initialised "undefined" value, which
// -Wuninitialized and -Wmaybe-uninitialized report wherever the intrinsics are inlined: in the
// templates below, whose instances no pragma in an including file reaches, and in its own code.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace kl::cpu::inline KL_CPU_ISA {  // one copy per ISA build: cpu_isa.h

struct Half { uint16_t bits; };
struct BHalf { uint16_t bits; };

inline float to_float(float x) { return x; }
// fp16 <-> float in integer and float arithmetic with selects, no branch and no library call, so
// that a loop over them vectorises at every level (F16C's scalar vcvtph2ps/vcvtps2ph, one element
// per instruction, kept GCC from vectorising such loops at the avx2 level). Bit-exact with
// f16_to_float and float_to_f16 (every fp16 pattern, and float patterns, tested in test_ops).
inline float to_float(Half x) {
  const uint32_t sign = static_cast<uint32_t>(x.bits & 0x8000u) << 16, em = x.bits & 0x7FFFu, shifted = em << 13;
  float f;
  std::memcpy(&f, &shifted, 4);
  f *= 0x1p112f;  // em << 13 is the value with its exponent biased by 15: times 2^112 rebiases it, subnormals too
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits = em > 0x7C00u ? 0x7FFFFFFFu : (em == 0x7C00u ? 0x7F800000u : bits) | sign;  // NaN canonical, its sign dropped
  std::memcpy(&f, &bits, 4);
  return f;
}
inline float to_float(BHalf x) {  // bf16 is the top half of a float: exact by a shift
  uint32_t u = static_cast<uint32_t>(x.bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
template <class T> T from_float(float f);
template <> inline float from_float<float>(float f) { return f; }
// Both round to nearest even, as float_to_f16 and float_to_bf16 do, NaN to their canonical 0x7FFF.
template <> inline Half from_float<Half>(float f) {  // branch-free, as to_float(Half)
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7FFFFFFFu;
  float af, sum;
  std::memcpy(&af, &a, 4);
  sum = af + 0.5f;  // below 2^-14: 0.5's ulp is fp16's subnormal step 2^-24, so the add rounds to nearest even
  uint32_t sub;
  std::memcpy(&sub, &sum, 4);
  sub -= 0x3F000000u;
  const uint32_t normal = (a - (112u << 23) + 0xFFFu + ((a >> 13) & 1u)) >> 13;  // rebias 127 -> 15, round to nearest even
  uint32_t h = a < 0x38800000u ? sub : normal;
  h = a >= 0x47800000u ? 0x7C00u : h;  // 2^16 and beyond, infinity included (65520 up to 2^16 carries into 0x7C00 above)
  h = a > 0x7F800000u ? 0x7FFFu : h | sign;  // NaN canonical, its sign dropped
  return Half{static_cast<uint16_t>(h)};
}
template <> inline BHalf from_float<BHalf>(float f) {  // integer ops only: loops over it vectorise
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  return BHalf{static_cast<uint16_t>((u & 0x7FFFFFFFu) > 0x7F800000u ? 0x7FFFu : rounded)};
}

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

inline constexpr float kLog2e = 1.44269504088896341f;

// 2^f on [-1/2, 1/2] by a degree-5 polynomial fitted here (Lawson's reweighted least squares,
// relative error 7.5e-8; 2.3e-7 evaluated in float). exp(x) is 2^(x log2e), with the multiply
// folded into whatever computed x: softmax's exp pass then takes 10 operations a vector, not the
// 14 of exp(x) = 2^n exp(r) with x = n ln2 + r.
inline constexpr float kExp2Poly[6] = {1.00000012f, 0.693146944f, 0.240221202f, 0.0555071309f, 0.00967554189f, 0.00132764725f};
// 2^t on one float, t = n + f with n = round(t), t clamped at -127 (2^-127 and below scale to a
// subnormal, as exp does); bit-identical with AVX2's vexp2 where t >= -126.5 (a row's tail beside
// its vectors); under it that vexp2 gives 0.
inline float exp2_scalar(float t) {
  t = vmax(t, -127.0f);
  const float n = std::nearbyint(t), f = t - n;
  float p = kExp2Poly[5];
  for (int i = 4; i >= 0; --i) p = madd(p, f, kExp2Poly[i]);
  return std::ldexp(p, static_cast<int>(n));
}
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#define KL_CPU_AVX512 1
#endif
#if !defined(KL_CPU_AVX512) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define KL_CPU_AVX2 1
#endif
// fp16 converted in integer arithmetic by load_pair and store_pair (a dozen operations or more a
// vector): worth converting once where a row is read several times.
#if defined(KL_CPU_AVX512) || defined(KL_CPU_AVX2)
inline constexpr bool kSoftHalf = false;
#else
inline constexpr bool kSoftHalf = true;
#endif

// One vector of floats at this build's width, 16 lanes on AVX-512, 8 on AVX2 and 4 on SSE2 (the
// generic level), so that a row's vector code is written once for all three levels. Mask: a
// lane-wise condition, a mask register or a vector of all-ones lanes.
#if defined(KL_CPU_AVX512)
using Vec = __m512;
using Mask = __mmask16;
inline constexpr int kLanes = 16;
inline Vec vset(float x) { return _mm512_set1_ps(x); }
inline Vec vadd(Vec a, Vec b) { return _mm512_add_ps(a, b); }
inline Vec vsub(Vec a, Vec b) { return _mm512_sub_ps(a, b); }
inline Vec vmul(Vec a, Vec b) { return _mm512_mul_ps(a, b); }
inline Vec vmax(Vec a, Vec b) { return _mm512_max_ps(a, b); }  // b where either is NaN
inline Vec vmin(Vec a, Vec b) { return _mm512_min_ps(a, b); }
inline Vec vfma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }   // a b + c
inline Vec vfms(Vec a, Vec b, Vec c) { return _mm512_fmsub_ps(a, b, c); }   // a b - c
inline Vec vfnma(Vec a, Vec b, Vec c) { return _mm512_fnmadd_ps(a, b, c); } // c - a b
inline Vec vrcp(Vec a) { return _mm512_rcp14_ps(a); }
inline Mask vgt(Vec a, Vec b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
inline Mask vne(Vec a, Vec b) { return _mm512_cmp_ps_mask(a, b, _CMP_NEQ_OQ); }
inline Vec vselect(Mask m, Vec yes, Vec no) { return _mm512_mask_mov_ps(no, m, yes); }
inline float hsum(Vec a) { return _mm512_reduce_add_ps(a); }
inline float hmax(Vec a) { return _mm512_reduce_max_ps(a); }
// 2^t: n = round(t) by vrndscaleps, 2^f by kExp2Poly, 2^n applied by vscalefps.
inline Vec vexp2(Vec t) {
  t = _mm512_max_ps(t, _mm512_set1_ps(-127.0f));
  const __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_sub_ps(t, n);
  __m512 p = _mm512_set1_ps(kExp2Poly[5]);
  for (int i = 4; i >= 0; --i) p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(kExp2Poly[i]));
  return _mm512_scalef_ps(p, n);
}
#elif defined(KL_CPU_AVX2)
using Vec = __m256;
using Mask = __m256;
inline constexpr int kLanes = 8;
inline Vec vset(float x) { return _mm256_set1_ps(x); }
inline Vec vadd(Vec a, Vec b) { return _mm256_add_ps(a, b); }
inline Vec vsub(Vec a, Vec b) { return _mm256_sub_ps(a, b); }
inline Vec vmul(Vec a, Vec b) { return _mm256_mul_ps(a, b); }
inline Vec vmax(Vec a, Vec b) { return _mm256_max_ps(a, b); }  // b where either is NaN
inline Vec vmin(Vec a, Vec b) { return _mm256_min_ps(a, b); }
inline Vec vfma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
inline Vec vfms(Vec a, Vec b, Vec c) { return _mm256_fmsub_ps(a, b, c); }
inline Vec vfnma(Vec a, Vec b, Vec c) { return _mm256_fnmadd_ps(a, b, c); }
inline Vec vrcp(Vec a) { return _mm256_rcp_ps(a); }
inline Mask vgt(Vec a, Vec b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
inline Mask vne(Vec a, Vec b) { return _mm256_cmp_ps(a, b, _CMP_NEQ_OQ); }
inline Vec vselect(Mask m, Vec yes, Vec no) { return _mm256_blendv_ps(no, yes, m); }
inline float hsum(Vec a) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}
inline float hmax(Vec a) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_max_ss(s, _mm_movehdup_ps(s)));
}
// 2^t: n rounded by vroundps, 2^n built in the exponent bits (n = -127 there gives 0).
inline Vec vexp2(Vec t) {
  t = _mm256_max_ps(t, _mm256_set1_ps(-127.0f));
  const __m256 n = _mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 f = _mm256_sub_ps(t, n);
  __m256 p = _mm256_set1_ps(kExp2Poly[5]);
  for (int i = 4; i >= 0; --i) p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(kExp2Poly[i]));
  const __m256i two_n = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(two_n));
}
#else
// SSE2, every x86-64: no FMA (vfma is a multiply and an add, rounded twice), no blend, no round
// instruction, and no conversion to or from fp16 (load_pair and store_pair convert in integer
// arithmetic, as to_float and from_float do).
using Vec = __m128;
using Mask = __m128;
inline constexpr int kLanes = 4;
inline Vec vset(float x) { return _mm_set1_ps(x); }
inline Vec vadd(Vec a, Vec b) { return _mm_add_ps(a, b); }
inline Vec vsub(Vec a, Vec b) { return _mm_sub_ps(a, b); }
inline Vec vmul(Vec a, Vec b) { return _mm_mul_ps(a, b); }
inline Vec vmax(Vec a, Vec b) { return _mm_max_ps(a, b); }  // b where either is NaN
inline Vec vmin(Vec a, Vec b) { return _mm_min_ps(a, b); }
inline Vec vfma(Vec a, Vec b, Vec c) { return _mm_add_ps(_mm_mul_ps(a, b), c); }
inline Vec vfms(Vec a, Vec b, Vec c) { return _mm_sub_ps(_mm_mul_ps(a, b), c); }
inline Vec vfnma(Vec a, Vec b, Vec c) { return _mm_sub_ps(c, _mm_mul_ps(a, b)); }
inline Vec vrcp(Vec a) { return _mm_rcp_ps(a); }
inline Mask vgt(Vec a, Vec b) { return _mm_cmpgt_ps(a, b); }
inline Mask vne(Vec a, Vec b) { return _mm_or_ps(_mm_cmplt_ps(a, b), _mm_cmpgt_ps(a, b)); }  // ordered, as AVX's _CMP_NEQ_OQ
inline Vec vselect(Mask m, Vec yes, Vec no) { return _mm_or_ps(_mm_and_ps(m, yes), _mm_andnot_ps(m, no)); }
inline __m128i vselect(__m128i m, __m128i yes, __m128i no) { return _mm_or_si128(_mm_and_si128(m, yes), _mm_andnot_si128(m, no)); }
inline float hsum(Vec a) {
  const __m128 s = _mm_add_ps(a, _mm_movehl_ps(a, a));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_shuffle_ps(s, s, 1)));
}
inline float hmax(Vec a) {
  const __m128 s = _mm_max_ps(a, _mm_movehl_ps(a, a));
  return _mm_cvtss_f32(_mm_max_ss(s, _mm_shuffle_ps(s, s, 1)));
}
// 2^t as AVX2's vexp2, n rounded to nearest even by adding and subtracting 1.5 2^23 (t <= 2^22).
inline Vec vexp2(Vec t) {
  t = _mm_max_ps(t, _mm_set1_ps(-127.0f));
  const __m128 magic = _mm_set1_ps(12582912.0f);
  const __m128 n = _mm_sub_ps(_mm_add_ps(t, magic), magic);
  const __m128 f = _mm_sub_ps(t, n);
  __m128 p = _mm_set1_ps(kExp2Poly[5]);
  for (int i = 4; i >= 0; --i) p = vfma(p, f, _mm_set1_ps(kExp2Poly[i]));
  const __m128i two_n = _mm_slli_epi32(_mm_add_epi32(_mm_cvtps_epi32(n), _mm_set1_epi32(127)), 23);
  return _mm_mul_ps(p, _mm_castsi128_ps(two_n));
}
#endif
inline Vec vzero() { return vset(0.0f); }

// 2 kLanes elements as two vectors, "pair order": fp32 and fp16 elements 0 to kLanes-1 in a, the
// rest in b; bf16 the even elements in a and the odd in b. A bf16 is the top half of a float, so
// one load splits into floats by a shift and an and, and store_pair joins two rounded vectors by
// an or: no shuffle across lanes either way (vpmovzxwd and vpmovdw were 3 of the 16-bit rows'
// operations a vector). What meets a pair elementwise (gamma, beta, a bias) is loaded as a pair
// from its own storage, so it comes in the same order; an fp32 buffer written by store_pair keeps
// the order of what was stored. Sums over pairs are sums over the elements.
inline constexpr int64_t kPair = 2 * kLanes;
struct Pair {
  Vec a, b;
};
#if defined(KL_CPU_AVX512)
inline Pair load_pair(const float* p) { return {_mm512_loadu_ps(p), _mm512_loadu_ps(p + 16)}; }
inline Pair load_pair(const Half* p) {
  return {_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))),
          _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 16)))};
}
inline Pair load_pair(const BHalf* p) {
  const __m512i raw = _mm512_loadu_si512(p);
  return {_mm512_castsi512_ps(_mm512_slli_epi32(raw, 16)), _mm512_castsi512_ps(_mm512_and_si512(raw, _mm512_set1_epi32(int(0xFFFF0000u))))};
}
// u + 0x7FFF + bit 16 of u: the top half is v's bf16 rounded to nearest even (from_float<BHalf>).
inline __m512i bf16_rounding_sum(__m512 v) {
  const __m512i u = _mm512_castps_si512(v);
  return _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7FFF)), _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1)));
}
// Stores a pair rounded as from_float<T>; `stream`: non-temporal, p 64-byte aligned.
inline void store_pair(float* p, Pair v, bool stream) {
  if (stream) {
    _mm512_stream_ps(p, v.a);
    _mm512_stream_ps(p + 16, v.b);
  } else {
    _mm512_storeu_ps(p, v.a);
    _mm512_storeu_ps(p + 16, v.b);
  }
}
inline void store_pair(Half* p, Pair v, bool stream) {
  const auto half16 = [](__m512 x) {
    const __m256i h = _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    return _mm256_mask_mov_epi16(h, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), _mm256_set1_epi16(0x7FFF));
  };
  const __m512i h = _mm512_inserti64x4(_mm512_castsi256_si512(half16(v.a)), half16(v.b), 1);
  if (stream) _mm512_stream_si512(reinterpret_cast<__m512i*>(p), h);
  else _mm512_storeu_si512(p, h);
}
inline void store_pair(BHalf* p, Pair v, bool stream) {
  const __mmask16 ord_a = _mm512_cmp_ps_mask(v.a, v.a, _CMP_ORD_Q), ord_b = _mm512_cmp_ps_mask(v.b, v.b, _CMP_ORD_Q);
  const __m512i even = _mm512_mask_srli_epi32(_mm512_set1_epi32(0x7FFF), ord_a, bf16_rounding_sum(v.a), 16);
  const __m512i odd = _mm512_mask_and_epi32(_mm512_set1_epi32(0x7FFF0000), ord_b, bf16_rounding_sum(v.b), _mm512_set1_epi32(int(0xFFFF0000u)));
  const __m512i h = _mm512_or_si512(even, odd);
  if (stream) _mm512_stream_si512(reinterpret_cast<__m512i*>(p), h);
  else _mm512_storeu_si512(p, h);
}
#elif defined(KL_CPU_AVX2)
inline Pair load_pair(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
inline Pair load_pair(const Half* p) {
  return {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))),
          _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)))};
}
inline Pair load_pair(const BHalf* p) {
  const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return {_mm256_castsi256_ps(_mm256_slli_epi32(raw, 16)), _mm256_castsi256_ps(_mm256_and_si256(raw, _mm256_set1_epi32(int(0xFFFF0000u))))};
}
inline __m256i bf16_rounding_sum(__m256 v) {  // as on AVX-512
  const __m256i u = _mm256_castps_si256(v);
  return _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7FFF)), _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1)));
}
inline void store256(void* p, __m256i v, bool stream) {  // stream: p 32-byte aligned
  if (stream) _mm256_stream_si256(static_cast<__m256i*>(p), v);
  else _mm256_storeu_si256(static_cast<__m256i*>(p), v);
}
inline void store_pair(float* p, Pair v, bool stream) {
  store256(p, _mm256_castps_si256(v.a), stream);
  store256(p + 8, _mm256_castps_si256(v.b), stream);
}
inline void store_pair(Half* p, Pair v, bool stream) {
  const auto half8 = [](__m256 x) {  // NaN lanes: their 32-bit all-ones compare packed to 16 bits
    const __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
    const __m128i nan16 = _mm_packs_epi32(_mm_castps_si128(_mm256_castps256_ps128(nan)), _mm_castps_si128(_mm256_extractf128_ps(nan, 1)));
    return _mm_blendv_epi8(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), _mm_set1_epi16(0x7FFF), nan16);
  };
  store256(p, _mm256_set_m128i(half8(v.b), half8(v.a)), stream);
}
inline void store_pair(BHalf* p, Pair v, bool stream) {
  const __m256i nan_a = _mm256_castps_si256(_mm256_cmp_ps(v.a, v.a, _CMP_UNORD_Q)), nan_b = _mm256_castps_si256(_mm256_cmp_ps(v.b, v.b, _CMP_UNORD_Q));
  const __m256i even = _mm256_blendv_epi8(_mm256_srli_epi32(bf16_rounding_sum(v.a), 16), _mm256_set1_epi32(0x7FFF), nan_a);
  const __m256i odd = _mm256_blendv_epi8(_mm256_and_si256(bf16_rounding_sum(v.b), _mm256_set1_epi32(int(0xFFFF0000u))), _mm256_set1_epi32(0x7FFF0000), nan_b);
  store256(p, _mm256_or_si256(even, odd), stream);
}
#else
inline __m128i ivset(uint32_t x) { return _mm_set1_epi32(static_cast<int>(x)); }
inline Pair load_pair(const float* p) { return {_mm_loadu_ps(p), _mm_loadu_ps(p + 4)}; }
// Four fp16 in the low halves of 32-bit lanes to floats, as to_float(Half) (its comments say why).
inline Vec half4_to_float(__m128i h) {
  const __m128i em = _mm_and_si128(h, ivset(0x7FFFu)), sign = _mm_slli_epi32(_mm_and_si128(h, ivset(0x8000u)), 16);
  const __m128i scaled = _mm_castps_si128(_mm_mul_ps(_mm_castsi128_ps(_mm_slli_epi32(em, 13)), _mm_set1_ps(0x1p112f)));
  const __m128i finite = _mm_or_si128(vselect(_mm_cmpeq_epi32(em, ivset(0x7C00u)), ivset(0x7F800000u), scaled), sign);
  return _mm_castsi128_ps(vselect(_mm_cmpgt_epi32(em, ivset(0x7C00u)), ivset(0x7FFFFFFFu), finite));
}
inline Pair load_pair(const Half* p) {
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), zero = _mm_setzero_si128();
  return {half4_to_float(_mm_unpacklo_epi16(raw, zero)), half4_to_float(_mm_unpackhi_epi16(raw, zero))};
}
inline Pair load_pair(const BHalf* p) {
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return {_mm_castsi128_ps(_mm_slli_epi32(raw, 16)), _mm_castsi128_ps(_mm_and_si128(raw, ivset(0xFFFF0000u)))};
}
inline __m128i bf16_rounding_sum(__m128 v) {  // as on AVX-512
  const __m128i u = _mm_castps_si128(v);
  return _mm_add_epi32(_mm_add_epi32(u, ivset(0x7FFFu)), _mm_and_si128(_mm_srli_epi32(u, 16), ivset(1)));
}
// Four floats to fp16 in the low halves of 32-bit lanes, as from_float<Half> (the magnitudes are
// under 2^31, so SSE2's signed compares order them).
inline __m128i float4_to_half(Vec x) {
  const __m128i u = _mm_castps_si128(x), a = _mm_and_si128(u, ivset(0x7FFFFFFFu));
  const __m128i sign = _mm_and_si128(_mm_srli_epi32(u, 16), ivset(0x8000u));
  const __m128i sub = _mm_sub_epi32(_mm_castps_si128(_mm_add_ps(_mm_castsi128_ps(a), _mm_set1_ps(0.5f))), ivset(0x3F000000u));
  const __m128i odd = _mm_and_si128(_mm_srli_epi32(a, 13), ivset(1));
  const __m128i normal = _mm_srli_epi32(_mm_add_epi32(_mm_sub_epi32(a, ivset(112u << 23)), _mm_add_epi32(ivset(0xFFFu), odd)), 13);
  __m128i h = vselect(_mm_cmplt_epi32(a, ivset(0x38800000u)), sub, normal);
  h = vselect(_mm_cmpgt_epi32(a, ivset(0x477FFFFFu)), ivset(0x7C00u), h);
  return vselect(_mm_cmpgt_epi32(a, ivset(0x7F800000u)), ivset(0x7FFFu), _mm_or_si128(h, sign));
}
inline void store128(void* p, __m128i v, bool stream) {  // stream: p 16-byte aligned
  if (stream) _mm_stream_si128(static_cast<__m128i*>(p), v);
  else _mm_storeu_si128(static_cast<__m128i*>(p), v);
}
inline void store_pair(float* p, Pair v, bool stream) {
  store128(p, _mm_castps_si128(v.a), stream);
  store128(p + 4, _mm_castps_si128(v.b), stream);
}
inline void store_pair(Half* p, Pair v, bool stream) {  // 16-bit lanes sign-extended, so that the signed pack keeps them
  const auto low16 = [](__m128i h) { return _mm_srai_epi32(_mm_slli_epi32(h, 16), 16); };
  store128(p, _mm_packs_epi32(low16(float4_to_half(v.a)), low16(float4_to_half(v.b))), stream);
}
inline void store_pair(BHalf* p, Pair v, bool stream) {
  const __m128i nan_a = _mm_castps_si128(_mm_cmpunord_ps(v.a, v.a)), nan_b = _mm_castps_si128(_mm_cmpunord_ps(v.b, v.b));
  const __m128i even = vselect(nan_a, ivset(0x7FFFu), _mm_srli_epi32(bf16_rounding_sum(v.a), 16));
  const __m128i odd = vselect(nan_b, ivset(0x7FFF0000u), _mm_and_si128(bf16_rounding_sum(v.b), ivset(0xFFFF0000u)));
  store128(p, _mm_or_si128(even, odd), stream);
}
#endif

// The first n / kPair * kPair elements of any storage type folded by step(acc, x) into four
// accumulators, read as pairs, and returned joined into one vector; the caller folds its lanes
// and the last n % kPair elements. One accumulator would make the pass wait on the step's latency
// (512 dependent adds for an 8192-float row: about 0.6 us on Zen 4, a third of the row's share of
// memory time). A 16-bit row is converted as it is read: one operation a vector, cheaper than the
// L2 traffic of keeping an fp32 copy of it.
template <class S, class Step, class Join> Vec pair_fold(const S* v, int64_t n, Vec init, Step step, Join join) {
  Vec acc[4] = {init, init, init, init};
  int64_t j = 0;
  for (; j + 2 * kPair <= n; j += 2 * kPair) {
    const Pair p = load_pair(v + j), q = load_pair(v + j + kPair);
    acc[0] = step(acc[0], p.a), acc[1] = step(acc[1], p.b), acc[2] = step(acc[2], q.a), acc[3] = step(acc[3], q.b);
  }
  if (j + kPair <= n) {
    const Pair p = load_pair(v + j);
    acc[0] = step(acc[0], p.a), acc[1] = step(acc[1], p.b);
  }
  return join(join(acc[0], acc[1]), join(acc[2], acc[3]));
}

// sum of (v[j] - c)^2 (sq) or of v[j] (!sq) over n elements of any storage type.
template <bool sq, class S> float pair_sum(const S* v, int64_t n, float c = 0.0f) {
  const Vec cv = vset(c);
  const auto add = [](Vec a, Vec b) { return vadd(a, b); };
  const auto step = [&](Vec acc, Vec x) {
    if constexpr (sq) {
      const Vec d = vsub(x, cv);
      return vfma(d, d, acc);
    } else {
      return vadd(acc, x);
    }
  };
  float s = hsum(pair_fold(v, n, vzero(), step, add));
  for (int64_t j = n / kPair * kPair; j < n; ++j) s += sq ? (to_float(v[j]) - c) * (to_float(v[j]) - c) : to_float(v[j]);
  return s;
}

// Asks for the 64-byte line at p in L2 (a row computed on now while the next row's lines arrive).
inline void prefetch_l2(const void* p) { __builtin_prefetch(p, 0, 2); }
// The lines of p that start in [j0, j1) asked into L2 (elements j with j * sizeof(T) a multiple of
// 64: whole lines when p is line-aligned), skipped when p is null (no next row).
template <class T> void prefetch_lines(const T* p, int64_t j0, int64_t j1) {
  constexpr int64_t kLine = 64 / int64_t(sizeof(T));
  if (p)
    for (int64_t k = (j0 + kLine - 1) / kLine * kLine; k < j1; k += kLine) prefetch_l2(p + k);
}

// body(j0, j1) over [0, n) in chunks of 256, the lines of next[j0, j1) asked into L2 before each:
// a pass over a row in L1 that brings the next row in as it goes, a few lines at a time (a burst
// of a whole row's prefetches would wait on the core's few outstanding misses).
inline constexpr int64_t kRowChunk = 256;
template <class T, class Body> void with_next_row_prefetched(const T* next, int64_t n, Body&& body) {
  for (int64_t j0 = 0; j0 < n; j0 += kRowChunk) {
    const int64_t j1 = j0 + kRowChunk < n ? j0 + kRowChunk : n;
    prefetch_lines(next, j0, j1);
    body(j0, j1);
  }
}

// erf(x), branch-free so loops over it vectorise: x P(x^2) / Q(x^2), degrees 5 and 5, fitted here
// to erf on [0, 3.9] (scripts/fit-erf.py: Loeb's reweighted least squares in 30-digit arithmetic,
// largest error 1.7e-8; evaluated in float, 3.2e-7 against libm's erf every 1e-4 on [-6, 6]), and
// +-1 exactly past +-3.9 (erf(3.9) = 1 - 3.5e-8), so that 1 + erf(x) is 0 there, not a rounding
// of the fit. Half the operations of an exp-based erfc; std::erf is a scalar libm call (bias_gelu's
// fused CPU rung ran at 2% of triad on std::erfc).
inline constexpr float kErfP[6] = {1.1283790934765699f, 0.19030041013989099f, 0.052753681824588862f,
                                   0.0037671507270171192f, 0.00028599371015007893f, 2.0645969841807903e-6f};
inline constexpr float kErfQ[6] = {1.0f, 0.50198167385197083f, 0.11408308462598455f,
                                   0.014970122437468095f, 0.0011649860940301393f, 3.8300919703148319e-5f};
inline float fast_erf(float x) {
  const float c = vmin(3.9f, vmax(-3.9f, x)), u = c * c;  // this order keeps a NaN
  float p = madd(kErfP[5], u, kErfP[4]), q = madd(kErfQ[5], u, kErfQ[4]);  // written out: GCC vectorises no inner loop
  p = madd(p, u, kErfP[3]), q = madd(q, u, kErfQ[3]);
  p = madd(p, u, kErfP[2]), q = madd(q, u, kErfQ[2]);
  p = madd(p, u, kErfP[1]), q = madd(q, u, kErfQ[1]);
  p = madd(p, u, kErfP[0]), q = madd(q, u, kErfQ[0]);
  const float r = c * p / q, one = c > 0 ? 1.0f : -1.0f;
  return std::fabs(x) > 3.9f ? one : r;
}

// gelu(t) = t (1/2 + erf(t / sqrt 2) / 2) on a vector by fast_erf's fit (the AVX2 and SSE2 levels';
// AVX-512 takes vgelu_table below), 1/sqrt 2 and the half folded into its coefficients (P_i 2^-(i+1) /
// sqrt 2 and Q_i 2^-i), the half added in the last FMA: 16 multiply-class operations a vector,
// not the 19 of 0.5 t (1 + erf(t / sqrt 2)). 1 / Q by vrcpps's 12-bit estimate and a Newton
// step for every dtype: 1 + erf cancels in the negative tail, where the estimate alone left bf16
// outputs up to 8% off (11% of them misrounded, 7.6% by more than one ulp). Past |t| = 3.9 sqrt 2
// the factor is 1 or 0 exactly.
template <int i> inline constexpr float kGeluP = float(double(kErfP[i]) * 0.70710678118654752 / double(2 << i));
template <int i> inline constexpr float kGeluQ = float(double(kErfQ[i]) / double(1 << i));
inline Vec vgelu(Vec t) {
  const Vec lim = vset(3.9f * 1.41421356f);
  const Vec c = vmin(lim, vmax(vsub(vzero(), lim), t));  // a NaN kept
  const Vec u = vmul(c, c);
  Vec p = vset(kGeluP<5>), q = vset(kGeluQ<5>);
  p = vfma(p, u, vset(kGeluP<4>)), q = vfma(q, u, vset(kGeluQ<4>));
  p = vfma(p, u, vset(kGeluP<3>)), q = vfma(q, u, vset(kGeluQ<3>));
  p = vfma(p, u, vset(kGeluP<2>)), q = vfma(q, u, vset(kGeluQ<2>));
  p = vfma(p, u, vset(kGeluP<1>)), q = vfma(q, u, vset(kGeluQ<1>));
  p = vfma(p, u, vset(kGeluP<0>)), q = vfma(q, u, vset(kGeluQ<0>));
  Vec r = vrcp(q);
  r = vmul(r, vfnma(q, r, vset(2.0f)));
  const Vec factor = vfma(vmul(c, p), r, vset(0.5f));
  const Vec step = vselect(vgt(t, vzero()), vset(1.0f), vzero());
  return vmul(t, vselect(vne(c, t), step, factor));
}

#if defined(KL_CPU_AVX512)
// gelu(t) = t Phi(t) on AVX-512, through q(a) = Phi(-a), a = |t|: Phi is q for t <= 0 and 1 - q
// above, so the small negative gelus keep their relative precision. q is a cubic in a on each of
// 31 intervals of [0, 5.5], 0 past (cpu_gelu_table.h, fitted by scripts/fit-gelu-table.py), each
// lane's four coefficients picked from 32 entries by vpermt2ps: 14 operations a vector, 5 of them
// multiply-class, against vgelu's 21 (16 multiply-class; Zen 4 runs about one 512-bit operation a
// cycle in this loop). Relative error 3.7e-7 at t > 0 and 1.1e-4 where t < 0 and |gelu| > 1e-3,
// absolute 5.2e-7; vgelu's there: 1.9e-7, 3.0e-4 and 9.4e-7 (without its Newton step, 2.7e-5,
// 3.9e-2 and 1.4e-4 with AVX-512's 14-bit estimate). +inf gives inf, -inf and NaN give NaN, as
// t Phi(t) does.
struct GeluTable {
  __m512 lo[4], hi[4];  // entries 0-15 and 16-31 of each power's coefficients
};
inline GeluTable gelu_table() {
  GeluTable g;
  for (int j = 0; j < 4; ++j) g.lo[j] = _mm512_load_ps(kGeluTable[j]), g.hi[j] = _mm512_load_ps(kGeluTable[j] + 16);
  return g;
}
inline Vec vgelu_table(Vec t, const GeluTable& g) {
  const Vec a = vmin(_mm512_abs_ps(t), vset(kGeluTableTop));  // a NaN becomes the top: q = 0
  const __m512i entry = _mm512_cvttps_epi32(vmul(a, vset(kGeluTableInvH)));
  Vec q = _mm512_permutex2var_ps(g.lo[3], entry, g.hi[3]);
  q = vfma(q, a, _mm512_permutex2var_ps(g.lo[2], entry, g.hi[2]));
  q = vfma(q, a, _mm512_permutex2var_ps(g.lo[1], entry, g.hi[1]));
  q = vfma(q, a, _mm512_permutex2var_ps(g.lo[0], entry, g.hi[0]));
  return vmul(t, _mm512_mask_sub_ps(q, vgt(t, vzero()), vset(1.0f), q));
}
#endif

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
#else  // SSE2, in every x86-64
  for (; j < n && (reinterpret_cast<uintptr_t>(dst + j) & 15) != 0; ++j) dst[j] = src[j];
  for (; j + 4 <= n; j += 4) _mm_stream_ps(dst + j, _mm_loadu_ps(src + j));
#endif
  for (; j < n; ++j) dst[j] = src[j];
}

inline void stream_fence() { _mm_sfence(); }

}  // namespace kl::cpu::inline KL_CPU_ISA
