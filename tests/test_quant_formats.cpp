// E2M1 (fp4) and E8M0 conversions (quant/formats.h), bit for bit against the CUDA toolkit's host
// paths (cuda_fp4.h, cuda_fp8.h) where the headers are present: every input pattern of the
// decoders, and for the encoders every bf16-spaced float, dense sweeps around each grid point and
// midpoint, random doubles, subnormals, infinities and NaNs. Without the headers the hand-computed
// table below (from the OCP Microscaling Formats (MX) Specification v1.0: its E2M1 element table
// and its E8M0 scale format) still checks the grid and the rounding.
#include "quant/formats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <bit>
#include <limits>
#include <random>
#include <vector>

#ifdef KERNELAB_HAVE_CUDA_HEADERS
#include <cuda_fp4.h>
#include <cuda_fp8.h>
#endif

namespace {

using kl::Fp8Saturation;
using kl::quant::E8m0Rounding;

uint32_t fbits(float f) { return std::bit_cast<uint32_t>(f); }
float ffrom(uint32_t u) { return std::bit_cast<float>(u); }
double dfrom(uint64_t u) { return std::bit_cast<double>(u); }

constexpr float kInf = std::numeric_limits<float>::infinity();

// OCP MX v1.0 table: E2M1 magnitudes by code (S.EE.M, bias 1, no inf/NaN, max 6).
TEST(QuantFormatsTable, E2m1GridAndRounding) {
  const float grid[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (int c = 0; c < 16; ++c) {
    const float want = (c & 8) ? -grid[c & 7] : grid[c & 7];
    EXPECT_EQ(fbits(kl::quant::e2m1_to_float(static_cast<uint8_t>(c))), fbits(want)) << c;
    EXPECT_EQ(kl::quant::float_to_e2m1(want), c) << c;  // every value round-trips (signed zeros too)
  }
  // The midpoint between codes lo and lo + 1 ties to the even one; a hair either side goes to the
  // nearer one.
  const struct { float x; uint8_t lo; } mids[] = {{0.25f, 0}, {0.75f, 1}, {1.25f, 2}, {1.75f, 3},
                                                  {2.5f, 4},  {3.5f, 5},  {5.0f, 6}};
  for (const auto& m : mids) {
    const uint8_t even = (m.lo & 1) ? m.lo + 1 : m.lo;
    for (uint8_t sign : {0, 8}) {
      const float x = sign ? -m.x : m.x;
      EXPECT_EQ(kl::quant::float_to_e2m1(x), even | sign) << x;
      EXPECT_EQ(kl::quant::float_to_e2m1(std::nextafter(x, 0.0f)), m.lo | sign) << x;
      EXPECT_EQ(kl::quant::float_to_e2m1(std::nextafter(x, sign ? -kInf : kInf)), (m.lo + 1) | sign) << x;
    }
  }
  EXPECT_EQ(kl::quant::float_to_e2m1(7.0f), 0x7);  // saturating
  EXPECT_EQ(kl::quant::float_to_e2m1(-kInf), 0xF);
  EXPECT_EQ(kl::quant::float_to_e2m1(std::nanf("")), 0x7);  // NaN: positive max
  EXPECT_EQ(kl::quant::float_to_e2m1(-0.1f), 0x8);           // underflow keeps the sign
  EXPECT_EQ(kl::quant::double_to_e2m1(0.25 + 0x1p-40), 0x1);
}

TEST(QuantFormatsTable, E8m0) {
  const auto sat = Fp8Saturation::satfinite, none = Fp8Saturation::none;
  const auto rz = E8m0Rounding::toward_zero, up = E8m0Rounding::up;
  EXPECT_EQ(kl::quant::float_to_e8m0(1.0f, none, rz), 127);
  EXPECT_EQ(kl::quant::float_to_e8m0(1.5f, none, rz), 127);
  EXPECT_EQ(kl::quant::float_to_e8m0(1.5f, none, up), 128);
  EXPECT_EQ(kl::quant::float_to_e8m0(-1.5f, none, up), 128);  // sign dropped
  EXPECT_EQ(kl::quant::float_to_e8m0(0.0f, none, up), 0);     // no zero: 2^-127
  EXPECT_EQ(kl::quant::float_to_e8m0(0x1p-127f, none, up), 0);
  EXPECT_EQ(kl::quant::float_to_e8m0(std::nextafter(0x1p-127f, 1.0f), none, up), 1);
  EXPECT_EQ(kl::quant::float_to_e8m0(0x1p-140f, none, rz), 0);
  EXPECT_EQ(kl::quant::float_to_e8m0(0x1p127f, none, up), 254);
  EXPECT_EQ(kl::quant::float_to_e8m0(0x1.8p127f, none, up), 255);  // 2^128: NaN unless saturating
  EXPECT_EQ(kl::quant::float_to_e8m0(0x1.8p127f, sat, up), 254);
  EXPECT_EQ(kl::quant::float_to_e8m0(kInf, none, rz), 255);
  EXPECT_EQ(kl::quant::float_to_e8m0(kInf, sat, rz), 254);
  EXPECT_EQ(kl::quant::float_to_e8m0(std::nanf(""), sat, rz), 255);
  EXPECT_EQ(kl::quant::double_to_e8m0(1e300, none, rz), 254);  // truncated to FLT_MAX first
  EXPECT_EQ(kl::quant::double_to_e8m0(1e300, none, up), 255);
  EXPECT_EQ(kl::quant::double_to_e8m0(1.0 + 0x1p-40, none, up), 128);  // the sticky bit sees the tail
  EXPECT_EQ(kl::quant::double_to_e8m0(1.0 + 0x1p-40, none, rz), 127);
  for (int e = 0; e < 255; ++e) EXPECT_EQ(kl::quant::e8m0_to_float(static_cast<uint8_t>(e)), std::ldexp(1.0f, e - 127)) << e;
  EXPECT_TRUE(std::isnan(kl::quant::e8m0_to_float(0xFF)));
}

#ifdef KERNELAB_HAVE_CUDA_HEADERS

// Float inputs: every pattern whose low 16 bits are zero (all bf16 values, both signs, NaNs and
// infinities included), plus dense steps around each E2M1 grid point and midpoint, plus random
// patterns and the boundaries of each float class.
std::vector<float> float_inputs() {
  std::vector<float> v;
  for (uint32_t hi = 0; hi < 0x10000u; ++hi) v.push_back(ffrom(hi << 16));
  for (float g : {0.0f, 0.25f, 0.5f, 0.75f, 1.0f, 1.25f, 1.5f, 1.75f, 2.0f, 2.5f, 3.0f, 3.5f, 4.0f, 5.0f, 6.0f, 7.0f}) {
    for (float s : {1.0f, -1.0f}) {
      float x = s * g;
      for (int k = 0; k < 64; ++k) x = std::nextafter(x, -kInf);
      for (int k = 0; k < 128; ++k, x = std::nextafter(x, kInf)) v.push_back(x);
    }
  }
  for (uint32_t u : {0x00000001u, 0x00400000u, 0x00400001u, 0x007FFFFFu, 0x00800000u, 0x00800001u, 0x7F7FFFFFu,
                     0x7F7F0000u, 0x7F7F0001u, 0x7F000000u, 0x7F000001u, 0x7F800000u, 0x7F800001u, 0x7FC00000u})
    for (uint32_t s : {0u, 0x80000000u}) v.push_back(ffrom(u | s));
  std::mt19937 gen(15);
  for (int i = 0; i < 200000; ++i) v.push_back(ffrom(static_cast<uint32_t>(gen())));
  return v;
}

std::vector<double> double_inputs() {
  std::vector<double> v;
  for (float f : float_inputs()) v.push_back(f);
  std::mt19937_64 gen(15);
  for (int i = 0; i < 200000; ++i) v.push_back(dfrom(gen()));
  for (int i = 0; i < 200000; ++i) v.push_back(std::ldexp(std::uniform_real_distribution<double>(-8, 8)(gen), -int(gen() % 8)));
  for (double g : {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 6.0, 0x1p-127, 0x1p127, 0x1p128, 3.4028234663852886e38})
    for (double d : {g, std::nextafter(g, 0.0), std::nextafter(g, 1e308), -g}) v.push_back(d);
  for (uint64_t u : {0x0000000000000001ull, 0x7FF0000000000000ull, 0xFFF0000000000000ull, 0x7FF8000000000000ull,
                     0xFFF0000000000001ull, 0x7FEFFFFFFFFFFFFFull, 0x3690000000000000ull, 0x3690000000000001ull})
    v.push_back(dfrom(u));
  return v;
}

template <class In, class Ours, class Ref>
void compare_all(const char* what, const std::vector<In>& inputs, Ours ours, Ref ref) {
  size_t bad = 0;
  for (const In& x : inputs) {
    const unsigned a = ours(x), b = ref(x);
    if (a != b && bad++ < 8) ADD_FAILURE() << what << ": input " << x << " -> ours 0x" << std::hex << a << ", cuda 0x" << b;
  }
  EXPECT_EQ(bad, 0u) << what << " over " << inputs.size() << " inputs";
}

TEST(QuantFormatsCuda, E2m1EveryPatternDecodes) {
  for (unsigned c = 0; c < 16; ++c) {
    const __half_raw h = __nv_cvt_fp4_to_halfraw(static_cast<__nv_fp4_storage_t>(c), __NV_E2M1);
    const __half hv = h;
    EXPECT_EQ(fbits(kl::quant::e2m1_to_float(static_cast<uint8_t>(c))), fbits(__half2float(hv))) << c;
  }
}

TEST(QuantFormatsCuda, E2m1FromFloatAndDouble) {
  compare_all("float_to_e2m1", float_inputs(), [](float x) { return unsigned(kl::quant::float_to_e2m1(x)); },
              [](float x) { return unsigned(__nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest)); });
  compare_all("double_to_e2m1", double_inputs(), [](double x) { return unsigned(kl::quant::double_to_e2m1(x)); },
              [](double x) { return unsigned(__nv_cvt_double_to_fp4(x, __NV_E2M1, cudaRoundNearest)); });
}

TEST(QuantFormatsCuda, E8m0EveryModeFromFloatAndDouble) {
  const auto fin = float_inputs();
  const auto din = double_inputs();
  for (auto s : {Fp8Saturation::none, Fp8Saturation::satfinite}) {
    const __nv_saturation_t cs = s == Fp8Saturation::none ? __NV_NOSAT : __NV_SATFINITE;
    for (auto r : {E8m0Rounding::toward_zero, E8m0Rounding::up}) {
      const cudaRoundMode cr = r == E8m0Rounding::up ? cudaRoundPosInf : cudaRoundZero;
      compare_all("float_to_e8m0", fin, [&](float x) { return unsigned(kl::quant::float_to_e8m0(x, s, r)); },
                  [&](float x) { return unsigned(__nv_cvt_float_to_e8m0(x, cs, cr)); });
      compare_all("double_to_e8m0", din, [&](double x) { return unsigned(kl::quant::double_to_e8m0(x, s, r)); },
                  [&](double x) { return unsigned(__nv_cvt_double_to_e8m0(x, cs, cr)); });
    }
  }
}

TEST(QuantFormatsCuda, E8m0EveryPatternDecodes) {
  for (unsigned c = 0; c < 256; ++c) {
    const __nv_bfloat16_raw b = __nv_cvt_e8m0_to_bf16raw(static_cast<__nv_fp8_storage_t>(c));
    const float want = ffrom(static_cast<uint32_t>(b.x) << 16);
    const float ours = kl::quant::e8m0_to_float(static_cast<uint8_t>(c));
    if (c == 0xFF) {
      EXPECT_TRUE(std::isnan(ours) && std::isnan(want));
    } else {
      EXPECT_EQ(fbits(ours), fbits(want)) << c;
    }
  }
}

#endif  // KERNELAB_HAVE_CUDA_HEADERS

}  // namespace
