// E2M1 and E8M0 conversions (see formats.h). The semantics, read from the CUDA 13 headers' host
// code and restated here in our own terms:
//  * E2M1 from double: round-to-nearest-even of the exact value onto the grid 0, 0.5, ..., 6 with
//    gradual underflow; every magnitude past 6 (infinity too) saturates to 6; NaN gives +6. From
//    float: the host path widens to double, so the same rounding applies.
//  * E8M0 from float: the toolkit first rounds the float to bf16 (toward zero, or up when rounding
//    up), then takes the exponent field; that is exactly floor(log2|x|) or ceil(log2|x|) on the
//    biased scale, with subnormal inputs giving 2^-127 (floor) or, when |x| > 2^-127, 2^-126 (up).
//  * E8M0 from double: the toolkit narrows to float by truncation plus a sticky bit (so a double
//    past the float range becomes FLT_MAX with the sticky bit set, and rounds toward zero to
//    2^127 even without saturation; a double infinity stays infinity) and then converts the float.
#include "quant/formats.h"

#include <cmath>
#include <bit>
#include <cstring>
#include <limits>

namespace kl::quant {

namespace {

uint32_t bits_of(float f) { return std::bit_cast<uint32_t>(f); }
float float_from_bits(uint32_t u) { return std::bit_cast<float>(u); }

constexpr uint32_t kFloatInf = 0x7F800000u;

}  // namespace

// ---------------------------------------------------------------- E2M1

uint8_t double_to_e2m1(double d) {
  if (std::isnan(d)) return 0x7;
  const uint8_t sign = std::signbit(d) ? 0x8 : 0x0;
  const double a = std::fabs(d);
  if (a >= 6.0) return sign | 0x7;
  // Below 1 the grid step is 0.5 (subnormals and the first binade share it), then 0.5, 1, 2 per
  // binade: scale |x| onto integer steps, round to nearest even, and map back to a code.
  uint8_t code;
  if (a < 2.0) {
    code = static_cast<uint8_t>(std::nearbyint(a * 2.0));  // 0..4 = 0, 0.5, 1, 1.5, 2
  } else if (a < 4.0) {
    code = static_cast<uint8_t>(4 + std::nearbyint(a - 2.0));  // 2, 3, 4 -> codes 4, 5, 6
  } else {
    code = static_cast<uint8_t>(6 + std::nearbyint((a - 4.0) / 2.0));  // 4, 6 -> codes 6, 7
  }
  return sign | code;
}

uint8_t float_to_e2m1(float f) { return double_to_e2m1(static_cast<double>(f)); }

float e2m1_to_float(uint8_t v) {
  static constexpr float kMagnitude[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const float m = kMagnitude[v & 0x7];
  return (v & 0x8) ? -m : m;
}

// ---------------------------------------------------------------- E8M0

uint8_t float_to_e8m0(float f, Fp8Saturation s, E8m0Rounding r) {
  const uint32_t a = bits_of(f) & 0x7FFFFFFFu;
  if (a > kFloatInf) return 0xFF;
  int e;  // biased power of two, before clipping to the format
  if (a == kFloatInf) {
    e = 0xFF;
  } else if (r == E8m0Rounding::toward_zero) {
    e = static_cast<int>(a >> 23);  // a subnormal or zero gives 0: 2^-127, the clip
  } else if (a == 0) {
    e = 0;
  } else if ((a >> 23) == 0) {
    e = a > 0x00400000u ? 1 : 0;  // subnormal: above 2^-127 rounds up to 2^-126
  } else {
    e = static_cast<int>(a >> 23) + ((a & 0x007FFFFFu) != 0 ? 1 : 0);
  }
  if (e >= 0xFF) return s == Fp8Saturation::satfinite ? 0xFE : 0xFF;
  return static_cast<uint8_t>(e);
}

uint8_t double_to_e8m0(double d, Fp8Saturation s, E8m0Rounding r) {
  if (std::isnan(d)) return 0xFF;
  // Truncate to float and keep a sticky bit for the lost part: then a float test of "is there
  // anything below the leading bit" sees the double's tail.
  const double a = std::fabs(d);
  float f;
  if (std::isinf(a)) {
    f = std::numeric_limits<float>::infinity();
  } else {
    f = static_cast<float>(a);
    if (static_cast<double>(f) > a) f = std::nextafter(f, 0.0f);  // covers the overflow to inf
    if (static_cast<double>(f) != a) f = float_from_bits(bits_of(f) | 1u);
  }
  return float_to_e8m0(f, s, r);
}

float e8m0_to_float(uint8_t v) {
  if (v == 0xFF) return std::numeric_limits<float>::quiet_NaN();
  return std::ldexp(1.0f, e8m0_exponent(v));
}

int e8m0_exponent(uint8_t v) { return static_cast<int>(v) - 127; }

}  // namespace kl::quant
