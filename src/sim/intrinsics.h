// The device functions nvcc builds in that the host compiler lacks: fast-math intrinsics
// (computed at full precision: a result within CUDA's error bounds), rounding-mode variants
// (round-to-nearest, the host's mode), bit manipulation, reinterpretation, the integer
// min/max overloads, cache-hinted loads and the half-precision math the toolkit keeps
// device-only. Everything else (expf, rsqrtf's neighbours, fmaxf...) is the C library's.
#pragma once
#include <math.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

// ---- float and double math -------------------------------------------------------------------
// Templates, so that a host definition of the same name in a program's own header (the CUDA
// samples' helper_math.h defines rsqrtf when not under nvcc, their mergeSort umin) is
// preferred, not a redefinition. So are umin & co. below.
template <class = void> inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
template <class = void> inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float rcbrtf(float x) { return 1.0f / std::cbrt(x); }
inline float exp10f(float x) { return std::pow(10.0f, x); }
inline float sinpif(float x) { return std::sin(float(M_PI) * x); }
inline float cospif(float x) { return std::cos(float(M_PI) * x); }
inline double sinpi(double x) { return std::sin(M_PI * x); }
inline double cospi(double x) { return std::cos(M_PI * x); }
inline float normcdff(float x) { return 0.5f * std::erfc(-x * float(M_SQRT1_2)); }
inline double normcdf(double x) { return 0.5 * std::erfc(-x * M_SQRT1_2); }
inline float __expf(float x) { return std::exp(x); }
inline float __exp10f(float x) { return std::pow(10.0f, x); }
inline float __logf(float x) { return std::log(x); }
inline float __log2f(float x) { return std::log2(x); }
inline float __log10f(float x) { return std::log10(x); }
inline float __sinf(float x) { return std::sin(x); }
inline float __cosf(float x) { return std::cos(x); }
inline float __tanf(float x) { return std::tan(x); }
inline void __sincosf(float x, float* s, float* c) { *s = std::sin(x), *c = std::cos(x); }
inline float __powf(float x, float y) { return std::pow(x, y); }
inline float __fdividef(float x, float y) { return x / y; }
inline float fdividef(float x, float y) { return x / y; }
inline float __saturatef(float x) { return x != x ? 0.0f : x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline float __frcp_rn(float a) { return 1.0f / a; }
inline float __fsqrt_rn(float a) { return std::sqrt(a); }
inline float __frsqrt_rn(float a) { return 1.0f / std::sqrt(a); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __fma_rn(double a, double b, double c) { return std::fma(a, b, c); }
inline double __drcp_rn(double a) { return 1.0 / a; }
inline double __dsqrt_rn(double a) { return std::sqrt(a); }

// ---- conversions and reinterpretation --------------------------------------------------------
inline int __float2int_rn(float x) { return int(std::nearbyint(x)); }
inline int __float2int_rz(float x) { return int(x); }
inline int __float2int_rd(float x) { return int(std::floor(x)); }
inline int __float2int_ru(float x) { return int(std::ceil(x)); }
inline unsigned __float2uint_rn(float x) { return unsigned(std::nearbyint(x)); }
inline unsigned __float2uint_rz(float x) { return unsigned(x); }
inline long long __float2ll_rn(float x) { return (long long)std::nearbyint(x); }
inline long long __double2ll_rn(double x) { return (long long)std::nearbyint(x); }
inline int __double2int_rn(double x) { return int(std::nearbyint(x)); }
inline float __int2float_rn(int x) { return float(x); }
inline float __uint2float_rn(unsigned x) { return float(x); }
inline float __ll2float_rn(long long x) { return float(x); }
inline float __double2float_rn(double x) { return float(x); }
inline double __int2double_rn(int x) { return double(x); }
namespace kl::sim::detail {
template <class To, class From>
inline To bits_as(const From& from) {  // std::bit_cast, which C++17 lacks
  static_assert(sizeof(To) == sizeof(From));
  To to;
  std::memcpy(static_cast<void*>(&to), static_cast<const void*>(&from), sizeof to);
  return to;
}
}  // namespace kl::sim::detail
inline int __float_as_int(float x) { return kl::sim::detail::bits_as<int>(x); }
inline unsigned __float_as_uint(float x) { return kl::sim::detail::bits_as<unsigned>(x); }
inline float __int_as_float(int x) { return kl::sim::detail::bits_as<float>(x); }
inline float __uint_as_float(unsigned x) { return kl::sim::detail::bits_as<float>(x); }
inline long long __double_as_longlong(double x) { return kl::sim::detail::bits_as<long long>(x); }
inline double __longlong_as_double(long long x) { return kl::sim::detail::bits_as<double>(x); }
inline int __double2hiint(double x) { return int(kl::sim::detail::bits_as<unsigned long long>(x) >> 32); }
inline int __double2loint(double x) { return int(kl::sim::detail::bits_as<unsigned long long>(x)); }
inline double __hiloint2double(int hi, int lo) {
  return kl::sim::detail::bits_as<double>((unsigned long long)(unsigned)hi << 32 | (unsigned)lo);
}

// ---- integer intrinsics ----------------------------------------------------------------------
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(unsigned(x)); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
inline int __ffs(int x) { return x == 0 ? 0 : __builtin_ctz(unsigned(x)) + 1; }
inline int __ffsll(long long x) { return x == 0 ? 0 : __builtin_ctzll((unsigned long long)x) + 1; }
inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i) r |= (x >> i & 1u) << (31 - i);
  return r;
}
inline unsigned long long __brevll(unsigned long long x) {
  return (unsigned long long)__brev(unsigned(x)) << 32 | __brev(unsigned(x >> 32));
}
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  const unsigned long long bytes = (unsigned long long)y << 32 | x;
  unsigned r = 0;
  for (int i = 0; i < 4; ++i) r |= unsigned(bytes >> (8 * (s >> (4 * i) & 7u)) & 0xffu) << (8 * i);
  return r;
}
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned s) {
  return unsigned(((unsigned long long)hi << 32 | lo) << (s & 31u) >> 32);
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned s) {
  return unsigned(((unsigned long long)hi << 32 | lo) >> (s & 31u));
}
inline unsigned __funnelshift_lc(unsigned lo, unsigned hi, unsigned s) { return __funnelshift_l(lo, hi, s > 32 ? 32 : s); }
inline unsigned __funnelshift_rc(unsigned lo, unsigned hi, unsigned s) {
  return unsigned(((unsigned long long)hi << 32 | lo) >> (s > 32 ? 32 : s));
}
inline int __mul24(int a, int b) { return int((long long)(a << 8 >> 8) * (b << 8 >> 8)); }
inline unsigned __umul24(unsigned a, unsigned b) { return (a & 0xffffffu) * (b & 0xffffffu); }
inline int __mulhi(int a, int b) { return int((long long)a * b >> 32); }
inline unsigned __umulhi(unsigned a, unsigned b) { return unsigned((unsigned long long)a * b >> 32); }
inline long long __mul64hi(long long a, long long b) { return (long long)((__int128)a * b >> 64); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return (unsigned long long)((unsigned __int128)a * b >> 64);
}
inline int __hadd(int a, int b) { return int(((long long)a + b) >> 1); }
inline int __rhadd(int a, int b) { return int(((long long)a + b + 1) >> 1); }
inline unsigned __uhadd(unsigned a, unsigned b) { return unsigned(((unsigned long long)a + b) >> 1); }
inline unsigned __urhadd(unsigned a, unsigned b) { return unsigned(((unsigned long long)a + b + 1) >> 1); }
inline unsigned __sad(int a, int b, unsigned c) { return c + unsigned(a > b ? (long long)a - b : (long long)b - a); }
inline unsigned __usad(unsigned a, unsigned b, unsigned c) { return c + (a > b ? a - b : b - a); }

template <class = void> inline unsigned umin(unsigned a, unsigned b) { return a < b ? a : b; }
template <class = void> inline unsigned umax(unsigned a, unsigned b) { return a > b ? a : b; }
template <class = void> inline long long llmin(long long a, long long b) { return a < b ? a : b; }
template <class = void> inline long long llmax(long long a, long long b) { return a > b ? a : b; }
template <class = void> inline unsigned long long ullmin(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
template <class = void> inline unsigned long long ullmax(unsigned long long a, unsigned long long b) { return a > b ? a : b; }

// CUDA's min/max accept mixed integer types (the usual arithmetic conversions decide) and
// treat floats as fminf/fmaxf do. std::min, where a program names it, is still std::min.
template <class A, class B, std::enable_if_t<std::is_arithmetic_v<A> && std::is_arithmetic_v<B>, int> = 0>
inline std::common_type_t<A, B> min(A a, B b) {
  using C = std::common_type_t<A, B>;
  if constexpr (std::is_floating_point_v<C>) return std::fmin(C(a), C(b));
  else return C(a) < C(b) ? C(a) : C(b);
}
template <class A, class B, std::enable_if_t<std::is_arithmetic_v<A> && std::is_arithmetic_v<B>, int> = 0>
inline std::common_type_t<A, B> max(A a, B b) {
  using C = std::common_type_t<A, B>;
  if constexpr (std::is_floating_point_v<C>) return std::fmax(C(a), C(b));
  else return C(a) > C(b) ? C(a) : C(b);
}

// ---- loads and stores with cache hints: plain memory accesses here, always inlined so that the
// profiling build instruments them in the caller (an out-of-line copy could be the plain build's)
template <class T> [[gnu::always_inline]] inline T __ldg(const T* p) { return *p; }
template <class T> [[gnu::always_inline]] inline T __ldcg(const T* p) { return *p; }
template <class T> [[gnu::always_inline]] inline T __ldca(const T* p) { return *p; }
template <class T> [[gnu::always_inline]] inline T __ldcs(const T* p) { return *p; }
template <class T> [[gnu::always_inline]] inline T __ldlu(const T* p) { return *p; }
template <class T> [[gnu::always_inline]] inline T __ldcv(const T* p) { return *p; }
template <class T> [[gnu::always_inline]] inline void __stcg(T* p, T v) { *p = v; }
template <class T> [[gnu::always_inline]] inline void __stcs(T* p, T v) { *p = v; }
template <class T> [[gnu::always_inline]] inline void __stwb(T* p, T v) { *p = v; }
template <class T> [[gnu::always_inline]] inline void __stwt(T* p, T v) { *p = v; }

inline long long clock64() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// ---- half and bfloat16 math the toolkit declares for the device only -------------------------
namespace kl::sim {
// fp16 bits as a float, equal to the toolkit's host __half2float for all 65536 patterns (test:
// PtxTwins.ElementDecodersAreTheToolkitsConversionsOfEveryPattern): a normal number by its bits
// (exponent rebiased by 127 - 15, mantissa widened); zeros, subnormals, infinities and NaN by the
// toolkit, whose __half2float is an out-of-line call with a normalising loop in every object (17% of
// the naive attention rung's simulated time).
inline float half_value(std::uint16_t h) {
  const unsigned exponent = h & 0x7c00u;
  if (exponent == 0 || exponent == 0x7c00u) {
    __half_raw r;
    r.x = h;
    return __half2float(__half(r));
  }
  return detail::bits_as<float>(std::uint32_t(h & 0x8000u) << 16 | (std::uint32_t(h & 0x7fffu) + 0x1c000u) << 13);
}
}  // namespace kl::sim

// An fma of two 16-bit products is exact in double, so one rounding to 16 bits is CUDA's.
inline __half __hfma(__half a, __half b, __half c) {
  return __double2half(double(__half2float(a)) * __half2float(b) + __half2float(c));
}
inline __half2 __hfma2(__half2 a, __half2 b, __half2 c) {
  return __halves2half2(__hfma(__low2half(a), __low2half(b), __low2half(c)),
                        __hfma(__high2half(a), __high2half(b), __high2half(c)));
}
inline __nv_bfloat16 __hfma(__nv_bfloat16 a, __nv_bfloat16 b, __nv_bfloat16 c) {
  return __double2bfloat16(double(__bfloat162float(a)) * __bfloat162float(b) + __bfloat162float(c));
}
inline __nv_bfloat162 __hfma2(__nv_bfloat162 a, __nv_bfloat162 b, __nv_bfloat162 c) {
  return __halves2bfloat162(__hfma(__low2bfloat16(a), __low2bfloat16(b), __low2bfloat16(c)),
                            __hfma(__high2bfloat16(a), __high2bfloat16(b), __high2bfloat16(c)));
}
inline int __half2int_rn(__half h) { return __float2int_rn(__half2float(h)); }

namespace kl::sim::detail {
inline __half2 map2(__half2 x, __half (*f)(__half)) { return __halves2half2(f(__low2half(x)), f(__high2half(x))); }
}  // namespace kl::sim::detail
#define KL_SIM_HALF_MATH(NAME, NAME2, EXPR)                                                                   \
  inline __half NAME(__half h) {                                                                          \
    const float x = __half2float(h);                                                                      \
    return __float2half(EXPR);                                                                            \
  }                                                                                                       \
  inline __nv_bfloat16 NAME(__nv_bfloat16 h) {                                                            \
    const float x = __bfloat162float(h);                                                                  \
    return __float2bfloat16(EXPR);                                                                        \
  }                                                                                                       \
  inline __half2 NAME2(__half2 x) { return kl::sim::detail::map2(x, [](__half h) { return NAME(h); }); }
KL_SIM_HALF_MATH(hexp, h2exp, std::exp(x))
KL_SIM_HALF_MATH(hexp2, h2exp2, std::exp2(x))
KL_SIM_HALF_MATH(hlog, h2log, std::log(x))
KL_SIM_HALF_MATH(hlog2, h2log2, std::log2(x))
KL_SIM_HALF_MATH(hsqrt, h2sqrt, std::sqrt(x))
KL_SIM_HALF_MATH(hrsqrt, h2rsqrt, 1.0f / std::sqrt(x))
KL_SIM_HALF_MATH(hrcp, h2rcp, 1.0f / x)
KL_SIM_HALF_MATH(hsin, h2sin, std::sin(x))
KL_SIM_HALF_MATH(hcos, h2cos, std::cos(x))
KL_SIM_HALF_MATH(htanh, h2tanh, std::tanh(x))
#undef KL_SIM_HALF_MATH
