// Number formats (kernelab/dtype.h): names, sizes, integer packing and bit-exact float conversions.
//
// Two layers of checks:
//  * oracle-free tests that always run: hand-computed values, and exhaustive structural checks of
//    round-to-nearest-even (every representable value round-trips; every midpoint ties to the even
//    neighbour; one ulp either side of a midpoint goes to the nearer neighbour);
//  * with KERNELAB_HAVE_CUDA_HEADERS, bit-for-bit comparison with the CUDA toolkit's host paths
//    (cuda_fp16.h, cuda_bf16.h, cuda_fp8.h) on exhaustive, boundary and random inputs.
#include "kernelab/dtype.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <bit>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#ifdef KERNELAB_HAVE_CUDA_HEADERS
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#endif

namespace {

using kl::DType;
using kl::Fp8Saturation;

uint32_t fbits(float f) { return std::bit_cast<uint32_t>(f); }
uint64_t dbits(double d) { return std::bit_cast<uint64_t>(d); }
float ffrom(uint32_t u) { return std::bit_cast<float>(u); }
double dfrom(uint64_t u) { return std::bit_cast<double>(u); }

std::string describe(float f) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "float 0x%08X (%.9g)", static_cast<unsigned>(fbits(f)), static_cast<double>(f));
  return buf;
}
std::string describe(double d) {
  char buf[80];
  std::snprintf(buf, sizeof buf, "double 0x%016llX (%.17g)", static_cast<unsigned long long>(dbits(d)), d);
  return buf;
}
std::string describe(uint32_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%X", static_cast<unsigned>(v));
  return buf;
}

// Runs `ours` and `ref` on every input and compares the (integer) results; reports the first few
// differences and the count.
template <class In, class Ours, class Ref>
void compare_all(const std::string& what, const std::vector<In>& inputs, Ours ours, Ref ref) {
  size_t bad = 0;
  for (const In& x : inputs) {
    const uint32_t a = static_cast<uint32_t>(ours(x));
    const uint32_t b = static_cast<uint32_t>(ref(x));
    if (a != b) {
      if (bad < 8) ADD_FAILURE() << what << ": " << describe(x) << " -> ours " << describe(a) << ", expected " << describe(b);
      ++bad;
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": mismatches out of " << inputs.size() << " inputs";
}

// ---------------------------------------------------------------- format descriptions (test side)

struct Fmt {
  const char* name;
  int bits;             // storage bits
  int man;              // explicit mantissa bits
  int bias;
  uint32_t max_finite;  // magnitude code of the largest finite value
};
constexpr Fmt kF16{"fp16", 16, 10, 15, 0x7BFF};
constexpr Fmt kBF16{"bf16", 16, 7, 127, 0x7F7F};
constexpr Fmt kE4M3{"e4m3", 8, 3, 7, 0x7E};
constexpr Fmt kE5M2{"e5m2", 8, 2, 15, 0x7B};

// Value of a positive magnitude code, computed independently of the code under test. Codes past the
// largest finite one are evaluated by the same formula (the next value the exponent range would
// give), which is what the upper midpoint of the largest finite value needs.
double code_value(const Fmt& f, uint32_t code) {
  const uint32_t e = code >> f.man;
  const uint32_t m = code & ((1u << f.man) - 1);
  if (e == 0) return std::ldexp(static_cast<double>(m), 1 - f.bias - f.man);
  return std::ldexp(static_cast<double>((1u << f.man) | m), static_cast<int>(e) - f.bias - f.man);
}

uint32_t sign_bit(const Fmt& f) { return 1u << (f.bits - 1); }

const std::vector<uint32_t> kFloatNaNs = {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFF800001u,
                                          0x7FFFFFFFu, 0xFFFFFFFFu, 0x7FA00000u, 0x7FE00001u};
const std::vector<uint64_t> kDoubleNaNs = {0x7FF8000000000000ull, 0xFFF8000000000000ull, 0x7FF0000000000001ull,
                                           0xFFF0000000000001ull, 0x7FF4000000000000ull, 0xFFFC000000000000ull,
                                           0x7FFFFFFFFFFFFFFFull, 0xFFFFFFFFFFFFFFFFull, 0x7FF8000000000001ull,
                                           0x7FF2000000000000ull, 0x7FFC000000000000ull, 0xFFF4000000000000ull};

std::vector<float> float_specials() {
  constexpr float inf = std::numeric_limits<float>::infinity();
  constexpr float mx = std::numeric_limits<float>::max();
  std::vector<float> v = {0.0f, -0.0f, inf, -inf, mx, -mx, std::numeric_limits<float>::min(),
                          std::numeric_limits<float>::denorm_min(), -std::numeric_limits<float>::denorm_min(),
                          1.0f, -1.0f, 1e10f, -1e10f, 1e-10f, 1e-30f, 1e-40f};
  for (uint32_t n : kFloatNaNs) v.push_back(ffrom(n));
  return v;
}

std::vector<double> double_specials() {
  constexpr double inf = std::numeric_limits<double>::infinity();
  const double fmax = std::numeric_limits<float>::max();
  std::vector<double> v = {0.0, -0.0, inf, -inf, std::numeric_limits<double>::max(), -std::numeric_limits<double>::max(),
                           std::numeric_limits<double>::min(), std::numeric_limits<double>::denorm_min(),
                           -std::numeric_limits<double>::denorm_min(), fmax, -fmax,
                           std::nextafter(fmax, inf), 0x1p128, 0x1p128 - 0x1p103, std::nextafter(0x1p128 - 0x1p103, 0.0),
                           std::nextafter(0x1p128 - 0x1p103, inf), -0x1p128, 1e300, -1e300, 1e-300, -1e-300,
                           0x1p-149, 0x1p-150, std::nextafter(0x1p-150, 1.0), 0x1p-160, 1.0, -1.0};
  for (uint64_t n : kDoubleNaNs) v.push_back(dfrom(n));
  return v;
}

// Every finite value of the format, every midpoint between neighbours (the largest finite value's
// upper midpoint included), and 1 and 2 float ulps either side of each midpoint, both signs.
[[maybe_unused]] std::vector<float> float_probes(const Fmt& f) {
  std::vector<float> v = float_specials();
  constexpr float inf = std::numeric_limits<float>::infinity();
  for (uint32_t c = 0; c <= f.max_finite; ++c) {
    const float lo = static_cast<float>(code_value(f, c));
    const float mid = static_cast<float>((code_value(f, c) + code_value(f, c + 1)) / 2);  // exact
    const float up1 = std::nextafter(mid, inf), dn1 = std::nextafter(mid, -inf);
    for (float x : {lo, mid, up1, dn1, std::nextafter(up1, inf), std::nextafter(dn1, -inf)}) {
      v.push_back(x);
      v.push_back(-x);
    }
  }
  return v;
}

// The same in double, plus points that catch double rounding through float: 1 double ulp either
// side of a midpoint, half a float ulp either side, and that +-1 double ulp.
[[maybe_unused]] std::vector<double> double_probes(const Fmt& f) {
  std::vector<double> v = double_specials();
  constexpr double inf = std::numeric_limits<double>::infinity();
  for (uint32_t c = 0; c <= f.max_finite; ++c) {
    const double lo = code_value(f, c);
    const double mid = (code_value(f, c) + code_value(f, c + 1)) / 2;
    const float midf = static_cast<float>(mid);
    const double fulp = static_cast<double>(std::nextafter(midf, std::numeric_limits<float>::infinity())) - mid;
    const double pts[] = {lo,
                          mid,
                          std::nextafter(mid, inf),
                          std::nextafter(mid, -inf),
                          mid + fulp,
                          mid - fulp,
                          mid + fulp / 2,
                          mid - fulp / 2,
                          std::nextafter(mid + fulp / 2, inf),
                          std::nextafter(mid - fulp / 2, -inf),
                          std::nextafter(mid + fulp / 2, -inf),
                          std::nextafter(mid - fulp / 2, inf)};
    for (double x : pts) {
      v.push_back(x);
      v.push_back(-x);
    }
  }
  return v;
}

// n random float bit patterns, plus n floats with a random sign and mantissa and an exponent drawn
// uniformly from [emin, emax] (subnormal where that falls below float's normal range).
[[maybe_unused]] std::vector<float> random_floats(size_t n, int emin, int emax, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> exp(emin, emax);
  std::vector<float> v;
  v.reserve(2 * n);
  for (size_t k = 0; k < n; ++k) v.push_back(ffrom(static_cast<uint32_t>(rng())));
  for (size_t k = 0; k < n; ++k) {
    const uint64_t r = rng();
    const int be = std::max(0, std::min(254, exp(rng) + 127));
    v.push_back(ffrom(static_cast<uint32_t>((r >> 63) << 31) | (static_cast<uint32_t>(be) << 23) |
                      static_cast<uint32_t>(r & 0x7FFFFF)));
  }
  return v;
}

[[maybe_unused]] std::vector<double> random_doubles(size_t n, int emin, int emax, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> exp(emin, emax);
  std::vector<double> v;
  v.reserve(2 * n);
  for (size_t k = 0; k < n; ++k) v.push_back(dfrom(rng()));
  for (size_t k = 0; k < n; ++k) {
    const uint64_t r = rng();
    const uint64_t be = static_cast<uint64_t>(std::max(0, std::min(2046, exp(rng) + 1023)));
    v.push_back(dfrom((r & 0x800FFFFFFFFFFFFFull) | (be << 52)));
  }
  return v;
}

// ---------------------------------------------------------------- structural RNE checks (no oracle)

// For every positive finite code c: the value encodes to c; the midpoint to c+1 encodes to whichever
// of c, c+1 is even; one ulp (of the source type) above/below the midpoint encodes to c+1 / c. All
// for both signs. `overflow(c)` maps the rounded code to the expected result where it passes
// max_finite (infinity, NaN or saturation), applied to the magnitude before adding the sign.
template <class Src, class Enc, class Over>
void check_rne_structure(const Fmt& f, const std::string& what, Enc enc, Over overflow) {
  constexpr Src inf = std::numeric_limits<Src>::infinity();
  size_t bad = 0;
  auto expect = [&](Src x, uint32_t want_mag) {
    for (int s = 0; s < 2; ++s) {
      const Src xs = s ? -x : x;
      const uint32_t want = (want_mag > f.max_finite ? overflow(want_mag) : want_mag) | (s ? sign_bit(f) : 0u);
      const uint32_t got = static_cast<uint32_t>(enc(xs));
      if (got != want) {
        if (bad < 8) ADD_FAILURE() << what << ": " << describe(xs) << " -> " << describe(got) << ", want " << describe(want);
        ++bad;
      }
    }
  };
  for (uint32_t c = 0; c <= f.max_finite; ++c) {
    const Src lo = static_cast<Src>(code_value(f, c));
    const Src mid = static_cast<Src>((code_value(f, c) + code_value(f, c + 1)) / 2);
    expect(lo, c);
    expect(mid, (c & 1) ? c + 1 : c);
    expect(std::nextafter(mid, inf), c + 1);
    expect(std::nextafter(mid, -inf), c);
  }
  EXPECT_EQ(bad, 0u) << what;
}

TEST(DtypeRne, Fp16FromFloatAndDouble) {
  auto over = [](uint32_t) { return 0x7C00u; };  // infinity
  check_rne_structure<float>(kF16, "float_to_f16", kl::float_to_f16, over);
  check_rne_structure<double>(kF16, "double_to_f16", kl::double_to_f16, over);
}

TEST(DtypeRne, Bf16FromFloatAndDouble) {
  auto over = [](uint32_t) { return 0x7F80u; };  // infinity
  check_rne_structure<float>(kBF16, "float_to_bf16", kl::float_to_bf16, over);
  check_rne_structure<double>(kBF16, "double_to_bf16", kl::double_to_bf16, over);
}

TEST(DtypeRne, Fp8FromFloatAndDouble) {
  const auto none = Fp8Saturation::none, sat = Fp8Saturation::satfinite;
  auto e4_nosat = [](uint32_t) { return 0x7Fu; };  // no infinity: NaN
  auto e5_nosat = [](uint32_t) { return 0x7Cu; };  // infinity
  auto e4_sat = [](uint32_t) { return 0x7Eu; };
  auto e5_sat = [](uint32_t) { return 0x7Bu; };
  check_rne_structure<float>(kE4M3, "float_to_e4m3 nosat", [&](float x) { return kl::float_to_e4m3(x, none); }, e4_nosat);
  check_rne_structure<float>(kE4M3, "float_to_e4m3 sat", [&](float x) { return kl::float_to_e4m3(x, sat); }, e4_sat);
  check_rne_structure<double>(kE4M3, "double_to_e4m3 nosat", [&](double x) { return kl::double_to_e4m3(x, none); }, e4_nosat);
  check_rne_structure<double>(kE4M3, "double_to_e4m3 sat", [&](double x) { return kl::double_to_e4m3(x, sat); }, e4_sat);
  check_rne_structure<float>(kE5M2, "float_to_e5m2 nosat", [&](float x) { return kl::float_to_e5m2(x, none); }, e5_nosat);
  check_rne_structure<float>(kE5M2, "float_to_e5m2 sat", [&](float x) { return kl::float_to_e5m2(x, sat); }, e5_sat);
  check_rne_structure<double>(kE5M2, "double_to_e5m2 nosat", [&](double x) { return kl::double_to_e5m2(x, none); }, e5_nosat);
  check_rne_structure<double>(kE5M2, "double_to_e5m2 sat", [&](double x) { return kl::double_to_e5m2(x, sat); }, e5_sat);
}

// Decoding every pattern against the independent formula; NaN patterns decode to 0x7FFFFFFF (fp16,
// fp8) or keep their bits (bf16).
TEST(DtypeDecode, AllPatternsMatchFormula) {
  size_t bad = 0;
  auto check = [&](const char* what, uint32_t pattern, float got, uint32_t want_bits) {
    if (fbits(got) != want_bits) {
      if (bad < 8) ADD_FAILURE() << what << " " << describe(pattern) << " -> " << describe(got) << ", want " << describe(want_bits);
      ++bad;
    }
  };
  auto finite = [](const Fmt& f, uint32_t p) {
    const float mag = static_cast<float>(code_value(f, p & (sign_bit(f) - 1)));
    return fbits((p & sign_bit(f)) ? -mag : mag);
  };
  const uint32_t finf = 0x7F800000u;
  for (uint32_t p = 0; p < 0x10000; ++p) {
    const uint32_t mag = p & 0x7FFF, sign = (p & 0x8000) << 16;
    check("f16_to_float", p, kl::f16_to_float(static_cast<uint16_t>(p)),
          mag < 0x7C00 ? finite(kF16, p) : mag == 0x7C00 ? (sign | finf) : 0x7FFFFFFFu);
    check("bf16_to_float", p, kl::bf16_to_float(static_cast<uint16_t>(p)), p << 16);
  }
  for (uint32_t p = 0; p < 0x100; ++p) {
    const uint32_t mag = p & 0x7F, sign = (p & 0x80) << 24;
    check("e4m3_to_float", p, kl::e4m3_to_float(static_cast<uint8_t>(p)), mag < 0x7F ? finite(kE4M3, p) : 0x7FFFFFFFu);
    check("e5m2_to_float", p, kl::e5m2_to_float(static_cast<uint8_t>(p)),
          mag < 0x7C ? finite(kE5M2, p) : mag == 0x7C ? (sign | finf) : 0x7FFFFFFFu);
  }
  EXPECT_EQ(bad, 0u);
}

// ---------------------------------------------------------------- hand-computed values (no oracle)

TEST(DtypeHand, Fp16) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(kl::float_to_f16(0.0f), 0x0000);
  EXPECT_EQ(kl::float_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(kl::float_to_f16(1.0f), 0x3C00);
  EXPECT_EQ(kl::float_to_f16(-2.0f), 0xC000);
  EXPECT_EQ(kl::float_to_f16(65504.0f), 0x7BFF);                       // max half
  EXPECT_EQ(kl::float_to_f16(std::nextafter(65520.0f, 0.0f)), 0x7BFF);  // just below overflow tie
  EXPECT_EQ(kl::float_to_f16(65520.0f), 0x7C00);                       // tie rounds to even: inf
  EXPECT_EQ(kl::float_to_f16(-1e9f), 0xFC00);
  EXPECT_EQ(kl::float_to_f16(inf), 0x7C00);
  EXPECT_EQ(kl::float_to_f16(-inf), 0xFC00);
  EXPECT_EQ(kl::float_to_f16(ffrom(0x7FC00000u)), 0x7FFF);  // canonical NaN
  EXPECT_EQ(kl::float_to_f16(ffrom(0xFF800001u)), 0x7FFF);  // sign and payload dropped
  EXPECT_EQ(kl::float_to_f16(1.0f + 0x1p-11f), 0x3C00);     // tie to even
  EXPECT_EQ(kl::float_to_f16(1.0f + 3 * 0x1p-11f), 0x3C02); // tie to even (up)
  EXPECT_EQ(kl::float_to_f16(1.0f + 0x1p-11f + 0x1p-23f), 0x3C01);
  EXPECT_EQ(kl::float_to_f16(0x1p-14f), 0x0400);  // min normal
  EXPECT_EQ(kl::float_to_f16(0x1p-24f), 0x0001);  // min subnormal
  EXPECT_EQ(kl::float_to_f16(0x1p-25f), 0x0000);  // tie to even: zero
  EXPECT_EQ(kl::float_to_f16(-0x1p-25f), 0x8000);
  EXPECT_EQ(kl::float_to_f16(std::nextafter(0x1p-25f, 1.0f)), 0x0001);
  EXPECT_EQ(kl::float_to_f16(3 * 0x1p-25f), 0x0002);
  EXPECT_EQ(kl::double_to_f16(1.0 + 0x1p-11 + 0x1p-40), 0x3C01);  // one rounding, not via float
  EXPECT_EQ(kl::double_to_f16(65519.999), 0x7BFF);
  EXPECT_EQ(kl::double_to_f16(1e300), 0x7C00);
  EXPECT_EQ(kl::double_to_f16(dfrom(0xFFF8000000000000ull)), 0x7FFF);
  EXPECT_EQ(fbits(kl::f16_to_float(0x7BFF)), fbits(65504.0f));
  EXPECT_EQ(fbits(kl::f16_to_float(0x0001)), fbits(0x1p-24f));
  EXPECT_EQ(fbits(kl::f16_to_float(0x8000)), 0x80000000u);
  EXPECT_EQ(fbits(kl::f16_to_float(0xFC00)), fbits(-inf));
  EXPECT_EQ(fbits(kl::f16_to_float(0x7E00)), 0x7FFFFFFFu);
  EXPECT_EQ(fbits(kl::f16_to_float(0xFC01)), 0x7FFFFFFFu);  // NaN sign dropped
}

TEST(DtypeHand, Bf16) {
  EXPECT_EQ(kl::float_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(kl::float_to_bf16(-0.0f), 0x8000);
  EXPECT_EQ(kl::float_to_bf16(1.0f + 0x1p-8f), 0x3F80);       // tie to even
  EXPECT_EQ(kl::float_to_bf16(1.0f + 3 * 0x1p-8f), 0x3F82);   // tie to even (up)
  EXPECT_EQ(kl::float_to_bf16(1.0f + 0x1p-8f + 0x1p-23f), 0x3F81);
  EXPECT_EQ(kl::float_to_bf16(ffrom(0x7F7F7FFFu)), 0x7F7F);
  EXPECT_EQ(kl::float_to_bf16(ffrom(0x7F7F8000u)), 0x7F80);   // tie, odd: rounds to inf
  EXPECT_EQ(kl::float_to_bf16(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_EQ(kl::float_to_bf16(-std::numeric_limits<float>::infinity()), 0xFF80);
  EXPECT_EQ(kl::float_to_bf16(ffrom(0xFFC00001u)), 0x7FFF);
  EXPECT_EQ(kl::float_to_bf16(ffrom(0x00008000u)), 0x0000);   // subnormal tie to even
  EXPECT_EQ(kl::float_to_bf16(ffrom(0x00018000u)), 0x0002);
  EXPECT_EQ(kl::double_to_bf16(1.0 + 0x1p-8 + 0x1p-40), 0x3F81);  // one rounding
  EXPECT_EQ(kl::double_to_bf16(1e300), 0x7F80);
  EXPECT_EQ(kl::double_to_bf16(-1e-300), 0x8000);
  EXPECT_EQ(kl::double_to_bf16(0x1p-133), 0x0001);
  EXPECT_EQ(kl::double_to_bf16(0x1p-134), 0x0000);
  EXPECT_EQ(kl::double_to_bf16(0x1p-134 + 0x1p-180), 0x0001);
  EXPECT_EQ(kl::double_to_bf16(dfrom(0x7FF0000000000001ull)), 0x7FFF);
  EXPECT_EQ(fbits(kl::bf16_to_float(0x3F80)), fbits(1.0f));
  EXPECT_EQ(fbits(kl::bf16_to_float(0xFFC1)), 0xFFC10000u);  // NaN bits kept as they are
}

TEST(DtypeHand, E4m3) {
  const auto none = Fp8Saturation::none, sat = Fp8Saturation::satfinite;
  constexpr float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(kl::float_to_e4m3(448.0f, none), 0x7E);
  EXPECT_EQ(kl::float_to_e4m3(464.0f, none), 0x7E);  // tie to even stays finite
  EXPECT_EQ(kl::float_to_e4m3(std::nextafter(464.0f, inf), none), 0x7F);
  EXPECT_EQ(kl::float_to_e4m3(std::nextafter(464.0f, inf), sat), 0x7E);
  EXPECT_EQ(kl::float_to_e4m3(-1000.0f, none), 0xFF);  // NaN with the sign kept
  EXPECT_EQ(kl::float_to_e4m3(-1000.0f, sat), 0xFE);
  EXPECT_EQ(kl::float_to_e4m3(inf, none), 0x7F);
  EXPECT_EQ(kl::float_to_e4m3(inf, sat), 0x7E);  // satfinite clamps infinities too
  EXPECT_EQ(kl::float_to_e4m3(-inf, sat), 0xFE);
  EXPECT_EQ(kl::float_to_e4m3(ffrom(0xFFC00000u), none), 0x7F);  // float NaN canonicalised: positive
  EXPECT_EQ(kl::float_to_e4m3(ffrom(0xFFC00000u), sat), 0x7F);
  EXPECT_EQ(kl::double_to_e4m3(dfrom(0xFFF8000000000000ull), sat), 0xFF);  // double NaN keeps sign
  EXPECT_EQ(kl::double_to_e4m3(dfrom(0x7FF0000000000001ull), none), 0x7F);
  EXPECT_EQ(kl::float_to_e4m3(1.0f, none), 0x38);
  EXPECT_EQ(kl::float_to_e4m3(1.0625f, none), 0x38);  // tie to even
  EXPECT_EQ(kl::float_to_e4m3(1.1875f, none), 0x3A);  // tie to even (up)
  EXPECT_EQ(kl::float_to_e4m3(0x1p-9f, none), 0x01);  // min subnormal
  EXPECT_EQ(kl::float_to_e4m3(0x1p-10f, none), 0x00);
  EXPECT_EQ(kl::float_to_e4m3(-0x1p-10f, none), 0x80);
  EXPECT_EQ(kl::float_to_e4m3(std::nextafter(0x1p-10f, 1.0f), none), 0x01);
  EXPECT_EQ(kl::double_to_e4m3(1.0625 + 0x1p-40, none), 0x39);
  EXPECT_EQ(fbits(kl::e4m3_to_float(0x7E)), fbits(448.0f));
  EXPECT_EQ(fbits(kl::e4m3_to_float(0x7F)), 0x7FFFFFFFu);
  EXPECT_EQ(fbits(kl::e4m3_to_float(0xFF)), 0x7FFFFFFFu);
  EXPECT_EQ(fbits(kl::e4m3_to_float(0x01)), fbits(0x1p-9f));
  EXPECT_EQ(fbits(kl::e4m3_to_float(0x08)), fbits(0x1p-6f));
  EXPECT_EQ(fbits(kl::e4m3_to_float(0x80)), 0x80000000u);
  EXPECT_EQ(fbits(kl::e4m3_to_float(0xB8)), fbits(-1.0f));
}

TEST(DtypeHand, E5m2) {
  const auto none = Fp8Saturation::none, sat = Fp8Saturation::satfinite;
  constexpr float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(kl::float_to_e5m2(57344.0f, none), 0x7B);
  EXPECT_EQ(kl::float_to_e5m2(std::nextafter(61440.0f, 0.0f), none), 0x7B);
  EXPECT_EQ(kl::float_to_e5m2(61440.0f, none), 0x7C);  // tie to even: inf
  EXPECT_EQ(kl::float_to_e5m2(61440.0f, sat), 0x7B);
  EXPECT_EQ(kl::float_to_e5m2(inf, none), 0x7C);
  EXPECT_EQ(kl::float_to_e5m2(inf, sat), 0x7B);
  EXPECT_EQ(kl::float_to_e5m2(-inf, none), 0xFC);
  EXPECT_EQ(kl::float_to_e5m2(-inf, sat), 0xFB);
  EXPECT_EQ(kl::float_to_e5m2(ffrom(0xFF800001u), none), 0x7F);  // float NaN canonicalised
  EXPECT_EQ(kl::double_to_e5m2(dfrom(0x7FF8000000000000ull), none), 0x7E);  // low bit = bit 50
  EXPECT_EQ(kl::double_to_e5m2(dfrom(0xFFF8000000000000ull), sat), 0xFE);
  EXPECT_EQ(kl::double_to_e5m2(dfrom(0x7FFC000000000000ull), none), 0x7F);
  EXPECT_EQ(kl::double_to_e5m2(dfrom(0x7FF4000000000000ull), sat), 0x7F);
  EXPECT_EQ(kl::double_to_e5m2(dfrom(0x7FF0000000000001ull), none), 0x7E);
  EXPECT_EQ(kl::float_to_e5m2(1.0f, none), 0x3C);
  EXPECT_EQ(kl::float_to_e5m2(1.125f, none), 0x3C);  // tie to even
  EXPECT_EQ(kl::float_to_e5m2(0x1p-16f, none), 0x01);
  EXPECT_EQ(kl::float_to_e5m2(0x1p-17f, none), 0x00);
  EXPECT_EQ(kl::float_to_e5m2(3 * 0x1p-17f, none), 0x02);
  EXPECT_EQ(fbits(kl::e5m2_to_float(0x7B)), fbits(57344.0f));
  EXPECT_EQ(fbits(kl::e5m2_to_float(0x7C)), fbits(inf));
  EXPECT_EQ(fbits(kl::e5m2_to_float(0xFC)), fbits(-inf));
  EXPECT_EQ(fbits(kl::e5m2_to_float(0x7D)), 0x7FFFFFFFu);
  EXPECT_EQ(fbits(kl::e5m2_to_float(0xFF)), 0x7FFFFFFFu);
  EXPECT_EQ(fbits(kl::e5m2_to_float(0x01)), fbits(0x1p-16f));
}

// ---------------------------------------------------------------- integers

TEST(DtypeInt, RoundingAndSaturation) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  const std::vector<std::pair<double, int>> i8 = {
      {0.0, 0},     {-0.0, 0},     {0.5, 0},       {1.5, 2},      {2.5, 2},       {-0.5, 0},   {-1.5, -2},
      {-2.5, -2},   {3.7, 4},      {-3.7, -4},     {126.5, 126},  {127.4, 127},   {127.5, 127}, {128.0, 127},
      {1e9, 127},   {inf, 127},    {-127.5, -128}, {-128.5, -128}, {-129.0, -128}, {-1e9, -128}, {-inf, -128},
      {0.49999999999999994, 0},    {1.0000000000000002, 1},       {-1.4999999999999998, -1}};
  for (auto [x, want] : i8) EXPECT_EQ(kl::double_to_i8(x), want) << "double_to_i8(" << x << ")";
  EXPECT_EQ(kl::double_to_i8(std::nan("")), 0);
  EXPECT_EQ(kl::double_to_i8(-std::nan("")), 0);
  const std::vector<std::pair<double, int>> i4 = {{5.5, 6},  {-5.5, -6}, {6.5, 6},  {7.49, 7}, {7.5, 7},  {8.0, 7},
                                                  {1e30, 7}, {inf, 7},   {-7.5, -8}, {-8.5, -8}, {-9.0, -8}, {-inf, -8},
                                                  {0.5, 0},  {-0.5, 0},  {1.5, 2},  {-2.5, -2}};
  for (auto [x, want] : i4) EXPECT_EQ(kl::double_to_i4(x), want) << "double_to_i4(" << x << ")";
  EXPECT_EQ(kl::double_to_i4(std::nan("")), 0);
  // Sweep against nearbyint (default rounding mode: nearest even) with clamping.
  size_t bad = 0;
  for (int k = -1200; k <= 1200; ++k) {
    for (double x : {k * 0.25, k * 0.25 + 1e-9, k * 0.25 - 1e-9}) {
      const int r8 = static_cast<int>(std::min(127.0, std::max(-128.0, std::nearbyint(x))));
      const int r4 = static_cast<int>(std::min(7.0, std::max(-8.0, std::nearbyint(x))));
      bad += kl::double_to_i8(x) != r8;
      bad += kl::double_to_i4(x) != r4;
    }
  }
  EXPECT_EQ(bad, 0u);
}

TEST(DtypeInt, Int4Packing) {
  uint8_t buf[5] = {};
  kl::i4_set(buf, 0, -1);
  kl::i4_set(buf, 1, 1);
  EXPECT_EQ(buf[0], 0x1F);  // element 0 in the low nibble
  kl::i4_set(buf, 3, -8);
  EXPECT_EQ(buf[1], 0x80);
  const uint8_t packed[1] = {0x8F};
  EXPECT_EQ(kl::i4_get(packed, 0), -1);
  EXPECT_EQ(kl::i4_get(packed, 1), -8);
  // Every value in every slot of a 9-element (odd count) buffer, others untouched.
  std::mt19937 rng(7);
  for (int rep = 0; rep < 4; ++rep) {
    int8_t shadow[9];
    uint8_t b[5];
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    for (int i = 0; i < 9; ++i) shadow[i] = kl::i4_get(b, i);
    for (int i = 0; i < 9; ++i) {
      for (int v = -8; v <= 7; ++v) {
        kl::i4_set(b, i, static_cast<int8_t>(v));
        shadow[i] = static_cast<int8_t>(v);
        for (int j = 0; j < 9; ++j) ASSERT_EQ(kl::i4_get(b, j), shadow[j]) << "set " << i << "=" << v << ", read " << j;
      }
    }
    // Byte 4 holds element 8 in its low nibble; its high nibble (no element) must be preserved.
    const uint8_t hi = b[4] & 0xF0;
    kl::i4_set(b, 8, 3);
    EXPECT_EQ(b[4], hi | 0x03);
  }
}

// ---------------------------------------------------------------- names, sizes, element access

TEST(DtypeNames, RoundTripAliasesUnknown) {
  const auto& all = kl::all_dtypes();
  const std::vector<DType> want = {DType::f64, DType::f32, DType::f16, DType::bf16,
                                   DType::e4m3, DType::e5m2, DType::i8, DType::i4, DType::i32};
  EXPECT_EQ(all, want);
  const std::vector<std::string> names = {"fp64", "fp32", "fp16", "bf16", "fp8e4m3", "fp8e5m2", "int8", "int4", "int32"};
  std::set<std::string> seen;
  for (size_t k = 0; k < all.size(); ++k) {
    EXPECT_EQ(kl::dtype_name(all[k]), names[k]);
    EXPECT_EQ(kl::parse_dtype(kl::dtype_name(all[k])), all[k]);
    seen.insert(std::string(kl::dtype_name(all[k])));
  }
  EXPECT_EQ(seen.size(), 9u);
  const std::vector<std::pair<std::string, DType>> aliases = {
      {"float64", DType::f64}, {"double", DType::f64},    {"f64", DType::f64},      {"float32", DType::f32},
      {"float", DType::f32},   {"f32", DType::f32},       {"float16", DType::f16},  {"half", DType::f16},
      {"f16", DType::f16},     {"bfloat16", DType::bf16}, {"e4m3", DType::e4m3},    {"fp8_e4m3", DType::e4m3},
      {"e5m2", DType::e5m2},   {"fp8_e5m2", DType::e5m2}, {"i8", DType::i8},        {"i4", DType::i4},
      {"FP32", DType::f32},    {"BFloat16", DType::bf16}, {"Half", DType::f16},     {"FP8E4M3", DType::e4m3},
      {"Fp8_E5M2", DType::e5m2}, {"INT4", DType::i4},     {"DOUBLE", DType::f64}};
  for (const auto& [s, t] : aliases) EXPECT_EQ(kl::parse_dtype(s), t) << s;
  for (const char* s : {"", "fp", "fp8", "int2", "int16", "float16x", " fp16", "fp16 ", "e4m3fn", "bf", "u8", "fp8e4m2"})
    EXPECT_EQ(kl::parse_dtype(s), std::nullopt) << "'" << s << "'";
}

TEST(DtypeNames, SizesAndEpsilon) {
  const std::vector<std::tuple<DType, int, bool, double>> props = {
      {DType::f64, 64, true, 0x1p-53}, {DType::f32, 32, true, 0x1p-24}, {DType::f16, 16, true, 0x1p-11},
      {DType::bf16, 16, true, 0x1p-8}, {DType::e4m3, 8, true, 0x1p-4},  {DType::e5m2, 8, true, 0x1p-3},
      {DType::i8, 8, false, 0.0},      {DType::i4, 4, false, 0.0}};
  for (const auto& [t, bits, is_float, eps] : props) {
    EXPECT_EQ(kl::dtype_bits(t), bits) << kl::dtype_name(t);
    EXPECT_EQ(kl::dtype_is_float(t), is_float) << kl::dtype_name(t);
    EXPECT_EQ(kl::dtype_epsilon(t), eps) << kl::dtype_name(t);
    if (t != DType::i4) {
      EXPECT_EQ(kl::dtype_storage_bytes(t, 7), 7 * bits / 8) << kl::dtype_name(t);
    }
  }
  EXPECT_EQ(kl::dtype_storage_bytes(DType::i4, 0), 0);
  EXPECT_EQ(kl::dtype_storage_bytes(DType::i4, 1), 1);
  EXPECT_EQ(kl::dtype_storage_bytes(DType::i4, 2), 1);
  EXPECT_EQ(kl::dtype_storage_bytes(DType::i4, 3), 2);
  EXPECT_EQ(kl::dtype_storage_bytes(DType::i4, 1001), 501);
  EXPECT_EQ(kl::dtype_storage_bytes(DType::f32, 0), 0);
}

TEST(DtypeAccess, StoreLoad) {
  alignas(8) uint8_t buf[64];
  uint8_t filler[64];
  std::memset(filler, 0xA5, sizeof filler);
  const double v = 1.0 + 0x1p-11 + 0x1p-40;  // rounds up only under a single rounding to fp16
  struct Case {
    DType t;
    double in, out;
  };
  const std::vector<Case> cases = {
      {DType::f64, v, v},
      {DType::f32, 0.1, static_cast<double>(0.1f)},
      {DType::f16, v, 1.0 + 0x1p-10},
      {DType::f16, 1e6, std::numeric_limits<double>::infinity()},
      {DType::bf16, 1.0 + 0x1p-8 + 0x1p-40, 1.0 + 0x1p-7},
      {DType::e4m3, 1e6, 448.0},  // fp8 stores saturate
      {DType::e4m3, -std::numeric_limits<double>::infinity(), -448.0},
      {DType::e4m3, 1.0625 + 0x1p-40, 1.125},
      {DType::e5m2, 1e6, 57344.0},
      {DType::e5m2, -std::numeric_limits<double>::infinity(), -57344.0},
      {DType::i8, 2.5, 2.0},
      {DType::i8, -300.0, -128.0},
      {DType::i4, 9.0, 7.0},
      {DType::i4, -2.5, -2.0},
  };
  for (const Case& c : cases) {
    for (int64_t i : {0, 1, 2, 5}) {
      std::memset(buf, 0xA5, sizeof buf);
      kl::store_from_double(c.t, buf, i, c.in);
      EXPECT_EQ(kl::load_as_double(c.t, buf, i), c.out) << kl::dtype_name(c.t) << " [" << i << "] <- " << c.in;
      // Neighbours keep their 0xA5 filler (int4: the other nibble of the same byte included).
      const int64_t bits = kl::dtype_bits(c.t);
      const int64_t first = i * bits / 8, last = ((i + 1) * bits + 7) / 8;
      for (int64_t k = 0; k < 64; ++k) {
        if (k >= first && k < last) continue;
        ASSERT_EQ(buf[k], 0xA5) << kl::dtype_name(c.t) << " byte " << k;
      }
      if (c.t == DType::i4) {
        EXPECT_EQ(kl::i4_get(buf, i ^ 1), kl::i4_get(filler, i ^ 1)) << "int4 [" << i << "] changed its neighbour";
      }
    }
  }
  // NaN stores: fp16 canonical NaN, fp8 NaN (not saturated), int 0.
  const double nan = std::nan("");
  kl::store_from_double(DType::f16, buf, 0, nan);
  EXPECT_EQ(buf[0] | (buf[1] << 8), 0x7FFF);
  kl::store_from_double(DType::e4m3, buf, 0, nan);
  EXPECT_TRUE(std::isnan(kl::load_as_double(DType::e4m3, buf, 0)));
  kl::store_from_double(DType::i8, buf, 0, nan);
  EXPECT_EQ(kl::load_as_double(DType::i8, buf, 0), 0.0);
}

// ---------------------------------------------------------------- CUDA host paths as the oracle

#ifdef KERNELAB_HAVE_CUDA_HEADERS
#define KL_NEED_ORACLE() ((void)0)

uint16_t cu_f2h(float f) { return static_cast<__half_raw>(__float2half_rn(f)).x; }
uint16_t cu_d2h(double d) { return static_cast<__half_raw>(__double2half(d)).x; }
uint32_t cu_h2f(uint16_t h) {
  __half_raw r;
  r.x = h;
  return fbits(__half2float(__half(r)));
}
uint16_t cu_f2bf(float f) { return static_cast<__nv_bfloat16_raw>(__float2bfloat16_rn(f)).x; }
uint16_t cu_d2bf(double d) { return static_cast<__nv_bfloat16_raw>(__double2bfloat16(d)).x; }
uint32_t cu_bf2f(uint16_t b) {
  __nv_bfloat16_raw r;
  r.x = b;
  return fbits(__bfloat162float(__nv_bfloat16(r)));
}
uint32_t cu_fp8_to_float(uint8_t v, __nv_fp8_interpretation_t fmt) {
  return fbits(__half2float(__half(__nv_cvt_fp8_to_halfraw(v, fmt))));
}
__nv_saturation_t cu_sat(Fp8Saturation s) { return s == Fp8Saturation::satfinite ? __NV_SATFINITE : __NV_NOSAT; }

#else
#define KL_NEED_ORACLE() GTEST_SKIP() << "built without the CUDA headers (KERNELAB_HAVE_CUDA_HEADERS)"
#endif

[[maybe_unused]] constexpr size_t kRandom = 3u << 20;  // random bit patterns per set, plus as many in a window

TEST(DtypeCuda, Half16ToFloatAllPatterns) {
  KL_NEED_ORACLE();
#ifdef KERNELAB_HAVE_CUDA_HEADERS
  std::vector<uint32_t> all(0x10000);
  for (uint32_t p = 0; p < 0x10000; ++p) all[p] = p;
  compare_all("f16_to_float", all, [](uint32_t p) { return fbits(kl::f16_to_float(static_cast<uint16_t>(p))); },
              [](uint32_t p) { return cu_h2f(static_cast<uint16_t>(p)); });
  compare_all("bf16_to_float", all, [](uint32_t p) { return fbits(kl::bf16_to_float(static_cast<uint16_t>(p))); },
              [](uint32_t p) { return cu_bf2f(static_cast<uint16_t>(p)); });
#endif
}

TEST(DtypeCuda, FloatToF16) {
  KL_NEED_ORACLE();
#ifdef KERNELAB_HAVE_CUDA_HEADERS
  auto in = float_probes(kF16);
  auto rnd = random_floats(kRandom, -30, 17, 1);
  in.insert(in.end(), rnd.begin(), rnd.end());
  compare_all("float_to_f16", in, kl::float_to_f16, cu_f2h);
#endif
}

TEST(DtypeCuda, DoubleToF16) {
  KL_NEED_ORACLE();
#ifdef KERNELAB_HAVE_CUDA_HEADERS
  auto in = double_probes(kF16);
  auto rnd = random_doubles(kRandom, -30, 17, 2);
  in.insert(in.end(), rnd.begin(), rnd.end());
  compare_all("double_to_f16", in, kl::double_to_f16, cu_d2h);
#endif
}

TEST(DtypeCuda, FloatToBf16) {
  KL_NEED_ORACLE();
#ifdef KERNELAB_HAVE_CUDA_HEADERS
  auto in = float_probes(kBF16);
  auto rnd = random_floats(kRandom, -150, 128, 3);  // bit patterns already cover the whole range
  in.insert(in.end(), rnd.begin(), rnd.end());
  compare_all("float_to_bf16", in, kl::float_to_bf16, cu_f2bf);
#endif
}

TEST(DtypeCuda, DoubleToBf16) {
  KL_NEED_ORACLE();
#ifdef KERNELAB_HAVE_CUDA_HEADERS
  auto in = double_probes(kBF16);
  auto rnd = random_doubles(kRandom, -160, 130, 4);
  auto sub = random_doubles(kRandom / 4, -150, -120, 5);  // bf16 subnormals through float subnormals
  in.insert(in.end(), rnd.begin(), rnd.end());
  in.insert(in.end(), sub.begin(), sub.end());
  compare_all("double_to_bf16", in, kl::double_to_bf16, cu_d2bf);
#endif
}

TEST(DtypeCuda, Fp8ToFloatAllPatterns) {
  KL_NEED_ORACLE();
#ifdef KERNELAB_HAVE_CUDA_HEADERS
  std::vector<uint32_t> all(0x100);
  for (uint32_t p = 0; p < 0x100; ++p) all[p] = p;
  compare_all("e4m3_to_float", all, [](uint32_t p) { return fbits(kl::e4m3_to_float(static_cast<uint8_t>(p))); },
              [](uint32_t p) { return cu_fp8_to_float(static_cast<uint8_t>(p), __NV_E4M3); });
  compare_all("e5m2_to_float", all, [](uint32_t p) { return fbits(kl::e5m2_to_float(static_cast<uint8_t>(p))); },
              [](uint32_t p) { return cu_fp8_to_float(static_cast<uint8_t>(p), __NV_E5M2); });
#endif
}

TEST(DtypeCuda, FloatToFp8) {
  KL_NEED_ORACLE();
#ifdef KERNELAB_HAVE_CUDA_HEADERS
  auto rnd = random_floats(kRandom, -20, 18, 6);
  for (const Fmt* f : {&kE4M3, &kE5M2}) {
    auto in = float_probes(*f);
    in.insert(in.end(), rnd.begin(), rnd.end());
    const bool e4 = f == &kE4M3;
    const auto interp = e4 ? __NV_E4M3 : __NV_E5M2;
    for (Fp8Saturation s : {Fp8Saturation::none, Fp8Saturation::satfinite}) {
      compare_all(std::string("float_to_") + f->name + (s == Fp8Saturation::none ? " nosat" : " satfinite"), in,
                  [&](float x) { return e4 ? kl::float_to_e4m3(x, s) : kl::float_to_e5m2(x, s); },
                  [&](float x) { return __nv_cvt_float_to_fp8(x, cu_sat(s), interp); });
    }
  }
#endif
}

TEST(DtypeCuda, DoubleToFp8) {
  KL_NEED_ORACLE();
#ifdef KERNELAB_HAVE_CUDA_HEADERS
  auto rnd = random_doubles(kRandom, -20, 18, 7);
  for (const Fmt* f : {&kE4M3, &kE5M2}) {
    auto in = double_probes(*f);
    in.insert(in.end(), rnd.begin(), rnd.end());
    const bool e4 = f == &kE4M3;
    const auto interp = e4 ? __NV_E4M3 : __NV_E5M2;
    for (Fp8Saturation s : {Fp8Saturation::none, Fp8Saturation::satfinite}) {
      compare_all(std::string("double_to_") + f->name + (s == Fp8Saturation::none ? " nosat" : " satfinite"), in,
                  [&](double x) { return e4 ? kl::double_to_e4m3(x, s) : kl::double_to_e5m2(x, s); },
                  [&](double x) { return __nv_cvt_double_to_fp8(x, cu_sat(s), interp); });
    }
  }
#endif
}

}  // namespace
