// Number formats: names, sizes and bit-exact conversions (see kernelab/dtype.h).
//
// Everything here is portable integer bit manipulation; no CUDA header is needed. The results
// match the CUDA 13 toolkit's host code paths (cuda_fp16.hpp, cuda_bf16.hpp, cuda_fp8.hpp), whose
// behaviour is summarised below and checked bit for bit by tests/test_dtype.cpp:
//
//  * Every narrowing conversion is round-to-nearest-even on the exact input value, with gradual
//    underflow (signed zeros kept). float inputs are widened to double first, which is exact, so a
//    single rounding core serves float and double sources alike; the double sources round once.
//  * fp16 / bf16: NaN -> 0x7FFF (sign and payload dropped); overflow and +-inf -> +-inf.
//  * fp16 / bf16 / fp8 -> float: exact; a NaN becomes 0x7FFFFFFF, except bf16 -> float, which is
//    a plain shift that keeps the sign and payload of the NaN.
//  * fp8 from float: a NaN is canonicalised first, so it always gives 0x7F (positive).
//    fp8 from double: e4m3 gives sign|0x7F; e5m2 gives sign|0x7E|(bit 50 of the double), i.e. the
//    sign is kept and the low bit comes from the second-highest payload bit.
//  * fp8 overflow (|x| past maxnorm + ulp/2 after rounding, and +-inf): __NV_SATFINITE gives
//    +-maxnorm (e4m3 0x7E = 448, e5m2 0x7B = 57344), infinities included; __NV_NOSAT gives
//    sign|0x7F (NaN) for e4m3, which has no infinity, and sign|0x7C (inf) for e5m2. NaN inputs
//    stay NaN under both modes.
#include "kernelab/dtype.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <bit>
#include <cstring>

namespace kl {

// ---------------------------------------------------------------- names and sizes

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f64: return "fp64";
    case DType::f32: return "fp32";
    case DType::f16: return "fp16";
    case DType::bf16: return "bf16";
    case DType::e4m3: return "fp8e4m3";
    case DType::e5m2: return "fp8e5m2";
    case DType::i8: return "int8";
    case DType::i4: return "int4";
    case DType::i32: return "int32";
  }
  return "unknown";
}

std::optional<DType> parse_dtype(std::string_view s) {
  struct Alias {
    std::string_view name;
    DType type;
  };
  static constexpr Alias aliases[] = {
      {"fp64", DType::f64},      {"float64", DType::f64},   {"double", DType::f64},
      {"f64", DType::f64},       {"fp32", DType::f32},      {"float32", DType::f32},
      {"float", DType::f32},     {"f32", DType::f32},       {"fp16", DType::f16},
      {"float16", DType::f16},   {"half", DType::f16},      {"f16", DType::f16},
      {"bf16", DType::bf16},     {"bfloat16", DType::bf16}, {"fp8e4m3", DType::e4m3},
      {"e4m3", DType::e4m3},     {"fp8_e4m3", DType::e4m3}, {"fp8e5m2", DType::e5m2},
      {"e5m2", DType::e5m2},     {"fp8_e5m2", DType::e5m2}, {"int8", DType::i8},
      {"i8", DType::i8},         {"int4", DType::i4},       {"i4", DType::i4},
      {"int32", DType::i32},     {"i32", DType::i32},
  };
  auto lower = [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); };
  for (const Alias& a : aliases) {
    if (a.name.size() != s.size()) continue;
    bool same = true;
    for (size_t k = 0; k < s.size() && same; ++k) same = lower(s[k]) == a.name[k];
    if (same) return a.type;
  }
  return std::nullopt;
}

const std::vector<DType>& all_dtypes() {
  static const std::vector<DType> all = {DType::f64,  DType::f32,  DType::f16, DType::bf16,
                                         DType::e4m3, DType::e5m2, DType::i8,  DType::i4, DType::i32};
  return all;
}

int dtype_bits(DType t) {
  switch (t) {
    case DType::f64: return 64;
    case DType::f32:
    case DType::i32: return 32;
    case DType::f16:
    case DType::bf16: return 16;
    case DType::e4m3:
    case DType::e5m2:
    case DType::i8: return 8;
    case DType::i4: return 4;
  }
  return 0;
}

int64_t dtype_storage_bytes(DType t, int64_t count) {
  if (t == DType::i4) return (count + 1) / 2;
  return count * (dtype_bits(t) / 8);
}

bool dtype_is_float(DType t) { return t != DType::i8 && t != DType::i4 && t != DType::i32; }

double dtype_epsilon(DType t) {
  switch (t) {
    case DType::f64: return 0x1p-53;
    case DType::f32: return 0x1p-24;
    case DType::f16: return 0x1p-11;
    case DType::bf16: return 0x1p-8;
    case DType::e4m3: return 0x1p-4;
    case DType::e5m2: return 0x1p-3;
    case DType::i8:
    case DType::i4:
    case DType::i32: return 0.0;
  }
  return 0.0;
}

// ---------------------------------------------------------------- bit helpers

namespace {

uint64_t bits_of(double d) { return std::bit_cast<uint64_t>(d); }
uint32_t bits_of(float f) { return std::bit_cast<uint32_t>(f); }
float float_from_bits(uint32_t u) { return std::bit_cast<float>(u); }

constexpr uint64_t kDoubleAbsMask = 0x7FFFFFFFFFFFFFFFull;
constexpr uint64_t kDoubleInf = 0x7FF0000000000000ull;
constexpr uint32_t kFloatCanonicalNaN = 0x7FFFFFFFu;

// Round |x| (given as the bits of a finite double with the sign cleared) to nearest-even in a binary
// format with `man` explicit mantissa bits and exponent bias `bias`, with subnormals and no upper
// exponent limit. Returns the magnitude encoding (biased exponent << man | mantissa): a rounding
// carry moves into the exponent field on its own. The caller decides what an encoding past the
// format's largest finite value means.
uint32_t round_magnitude(uint64_t abs_bits, int man, int bias) {
  int biased = static_cast<int>(abs_bits >> 52);
  uint64_t sig = abs_bits & 0x000FFFFFFFFFFFFFull;
  if (biased == 0) {
    biased = 1;  // double subnormal: sig * 2^-1074, far below every target's subnormals
  } else {
    sig |= 1ull << 52;
  }
  const int exp = biased - 1023;                 // |x| = sig * 2^(exp - 52), sig in [2^52, 2^53)
  const int min_exp = 1 - bias;                  // smallest normal exponent of the target
  const int target_exp = exp > min_exp ? exp : min_exp;
  const int quantum = target_exp - man;          // weight of the target's last mantissa bit
  const int shift = quantum - (exp - 52);        // bits of sig that fall below the quantum
  uint64_t n;                                    // |x| / 2^quantum, rounded
  if (shift <= 0) {
    n = sig << -shift;  // not reached for the narrow formats here, kept for completeness
  } else if (shift >= 64) {
    n = 0;  // |x| < 2^(quantum-11): below half the smallest subnormal
  } else {
    n = sig >> shift;
    const uint64_t rest = sig & ((1ull << shift) - 1);
    const uint64_t half = 1ull << (shift - 1);
    if (rest > half || (rest == half && (n & 1))) ++n;
  }
  // Normal: n includes the hidden bit 2^man, so (target_exp + bias - 1) << man plus n yields the
  // exponent field target_exp + bias. Subnormal: target_exp + bias - 1 == 0 and n is the mantissa.
  return (static_cast<uint32_t>(target_exp + bias - 1) << man) + static_cast<uint32_t>(n);
}

// Common part of the fp16 / bf16 narrowing: `inf` is the magnitude encoding of infinity.
uint16_t double_to_16(double d, int man, int bias, uint32_t inf) {
  const uint64_t u = bits_of(d);
  const uint64_t a = u & kDoubleAbsMask;
  if (a > kDoubleInf) return 0x7FFF;  // canonical NaN, sign dropped
  const uint16_t sign = static_cast<uint16_t>((u >> 48) & 0x8000);
  if (a == kDoubleInf) return static_cast<uint16_t>(sign | inf);
  uint32_t m = round_magnitude(a, man, bias);
  if (m > inf) m = inf;
  return static_cast<uint16_t>(sign | m);
}

struct Fp8Format {
  int man;
  int bias;
  uint8_t maxnorm;  // magnitude encoding of the largest finite value
  bool e4m3;
};
constexpr Fp8Format kE4M3{3, 7, 0x7E, true};
constexpr Fp8Format kE5M2{2, 15, 0x7B, false};

uint8_t double_to_fp8(double d, Fp8Saturation s, const Fp8Format& f) {
  const uint64_t u = bits_of(d);
  const uint64_t a = u & kDoubleAbsMask;
  const uint8_t sign = static_cast<uint8_t>((u >> 56) & 0x80);
  if (a > kDoubleInf) {
    // NaN keeps its sign; e5m2 takes its low mantissa bit from bit 50 of the double.
    if (f.e4m3) return static_cast<uint8_t>(sign | 0x7F);
    return static_cast<uint8_t>(sign | 0x7E | ((u >> 50) & 1));
  }
  const uint32_t m = a == kDoubleInf ? 0xFFu : round_magnitude(a, f.man, f.bias);
  if (m > f.maxnorm) {
    if (s == Fp8Saturation::satfinite) return static_cast<uint8_t>(sign | f.maxnorm);
    return static_cast<uint8_t>(sign | (f.e4m3 ? 0x7F : 0x7C));
  }
  return static_cast<uint8_t>(sign | m);
}

uint8_t float_to_fp8(float x, Fp8Saturation s, const Fp8Format& f) {
  if ((bits_of(x) & 0x7FFFFFFFu) > 0x7F800000u) return 0x7F;  // NaN is canonicalised first
  return double_to_fp8(static_cast<double>(x), s, f);
}

// Exact value of a finite magnitude encoding (exponent field `e`, mantissa `m` of `man` bits, bias
// `bias`) as float bits, sign supplied by the caller. Valid for formats that float contains exactly.
uint32_t widen_finite(uint32_t e, uint32_t m, int man, int bias) {
  if (e == 0) {
    if (m == 0) return 0;
    // Subnormal: normalise so that the leading 1 becomes the hidden bit.
    int fe = 1 - bias + 127;
    while ((m & (1u << man)) == 0) {
      m <<= 1;
      --fe;
    }
    m &= (1u << man) - 1;
    return (static_cast<uint32_t>(fe) << 23) | (m << (23 - man));
  }
  return ((e - static_cast<uint32_t>(bias) + 127u) << 23) | (m << (23 - man));
}

}  // namespace

// ---------------------------------------------------------------- fp16 / bf16

uint16_t float_to_f16(float f) { return double_to_16(static_cast<double>(f), 10, 15, 0x7C00); }
uint16_t double_to_f16(double d) { return double_to_16(d, 10, 15, 0x7C00); }

float f16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t e = (h >> 10) & 0x1F;
  const uint32_t m = h & 0x3FF;
  if (e == 0x1F) return float_from_bits(m ? kFloatCanonicalNaN : (sign | 0x7F800000u));
  return float_from_bits(sign | widen_finite(e, m, 10, 15));
}

uint16_t float_to_bf16(float f) { return double_to_16(static_cast<double>(f), 7, 127, 0x7F80); }
uint16_t double_to_bf16(double d) { return double_to_16(d, 7, 127, 0x7F80); }

float bf16_to_float(uint16_t b) { return float_from_bits(static_cast<uint32_t>(b) << 16); }

// ---------------------------------------------------------------- fp8

uint8_t float_to_e4m3(float f, Fp8Saturation s) { return float_to_fp8(f, s, kE4M3); }
uint8_t double_to_e4m3(double d, Fp8Saturation s) { return double_to_fp8(d, s, kE4M3); }
uint8_t float_to_e5m2(float f, Fp8Saturation s) { return float_to_fp8(f, s, kE5M2); }
uint8_t double_to_e5m2(double d, Fp8Saturation s) { return double_to_fp8(d, s, kE5M2); }

float e4m3_to_float(uint8_t v) {
  if ((v & 0x7F) == 0x7F) return float_from_bits(kFloatCanonicalNaN);  // NaN, sign dropped
  const uint32_t sign = static_cast<uint32_t>(v & 0x80) << 24;
  return float_from_bits(sign | widen_finite((v >> 3) & 0xF, v & 0x7, 3, 7));
}

float e5m2_to_float(uint8_t v) {
  const uint32_t sign = static_cast<uint32_t>(v & 0x80) << 24;
  const uint32_t e = (v >> 2) & 0x1F;
  const uint32_t m = v & 0x3;
  if (e == 0x1F) return float_from_bits(m ? kFloatCanonicalNaN : (sign | 0x7F800000u));
  return float_from_bits(sign | widen_finite(e, m, 2, 15));
}

// ---------------------------------------------------------------- integers

namespace {

// Round to nearest even after clamping to [lo, hi]; NaN gives 0.
int round_saturate(double d, int lo, int hi) {
  if (d != d) return 0;
  if (d <= lo) return lo;
  if (d >= hi) return hi;
  // |d| < 2^8 here: truncation and the fraction are exact.
  int t = static_cast<int>(d);  // toward zero
  const double frac = d - t;     // in (-1, 1), same sign as d
  if (frac > 0.5 || (frac == 0.5 && (t & 1))) ++t;
  if (frac < -0.5 || (frac == -0.5 && (t & 1))) --t;
  return t;
}

}  // namespace

int8_t double_to_i8(double d) { return static_cast<int8_t>(round_saturate(d, -128, 127)); }
int8_t double_to_i4(double d) { return static_cast<int8_t>(round_saturate(d, -8, 7)); }

int8_t i4_get(const uint8_t* base, int64_t i) {
  const uint8_t byte = base[i >> 1];
  const int nib = (i & 1) ? (byte >> 4) : (byte & 0xF);
  return static_cast<int8_t>((nib ^ 8) - 8);
}

void i4_set(uint8_t* base, int64_t i, int8_t v) {
  uint8_t& byte = base[i >> 1];
  const uint8_t nib = static_cast<uint8_t>(v) & 0xF;
  byte = (i & 1) ? static_cast<uint8_t>((byte & 0x0F) | (nib << 4)) : static_cast<uint8_t>((byte & 0xF0) | nib);
}

// ---------------------------------------------------------------- element access

double load_as_double(DType t, const void* base, int64_t i) {
  switch (t) {
    case DType::f64: return static_cast<const double*>(base)[i];
    case DType::f32: return static_cast<const float*>(base)[i];
    case DType::f16: return f16_to_float(static_cast<const uint16_t*>(base)[i]);
    case DType::bf16: return bf16_to_float(static_cast<const uint16_t*>(base)[i]);
    case DType::e4m3: return e4m3_to_float(static_cast<const uint8_t*>(base)[i]);
    case DType::e5m2: return e5m2_to_float(static_cast<const uint8_t*>(base)[i]);
    case DType::i8: return static_cast<const int8_t*>(base)[i];
    case DType::i4: return i4_get(static_cast<const uint8_t*>(base), i);
    case DType::i32: return static_cast<const int32_t*>(base)[i];
  }
  return 0.0;
}

void store_from_double(DType t, void* base, int64_t i, double v) {
  switch (t) {
    case DType::f64: static_cast<double*>(base)[i] = v; return;
    case DType::f32: static_cast<float*>(base)[i] = static_cast<float>(v); return;
    case DType::f16: static_cast<uint16_t*>(base)[i] = double_to_f16(v); return;
    case DType::bf16: static_cast<uint16_t*>(base)[i] = double_to_bf16(v); return;
    case DType::e4m3: static_cast<uint8_t*>(base)[i] = double_to_e4m3(v, Fp8Saturation::satfinite); return;
    case DType::e5m2: static_cast<uint8_t*>(base)[i] = double_to_e5m2(v, Fp8Saturation::satfinite); return;
    case DType::i8: static_cast<int8_t*>(base)[i] = double_to_i8(v); return;
    case DType::i4: i4_set(static_cast<uint8_t*>(base), i, double_to_i4(v)); return;
    case DType::i32: static_cast<int32_t*>(base)[i] = static_cast<int32_t>(std::clamp(std::nearbyint(v), -2147483648.0, 2147483647.0)); return;
  }
}

}  // namespace kl
