// The narrow formats of the OCP microscaling (MX) family that kernelab/dtype.h lacks, as raw bit
// patterns: E2M1 (fp4) elements and E8M0 (power-of-two) scales. Bit-exact with the CUDA toolkit's
// host paths, __nv_cvt_*_to_fp4 (cuda_fp4.hpp) and __nv_cvt_*_to_e8m0 (cuda_fp8.hpp);
// tests/test_quant_formats.cpp compares every pattern and a dense sweep with them.
#pragma once
#include <cstdint>

#include "kernelab/dtype.h"

namespace kl::quant {

// E2M1: S.EE.M, bias 1, values 0, 0.5, 1, 1.5, 2, 3, 4, 6; no infinity, no NaN. Narrowing is
// round-to-nearest-even and always saturating (|x| > 6 and +-inf give +-6); a NaN gives +6 (0x7);
// an underflow keeps its sign (-0.1 gives 0x8).
uint8_t float_to_e2m1(float f);    // __nv_cvt_float_to_fp4(f, __NV_E2M1, cudaRoundNearest)
uint8_t double_to_e2m1(double d);  // __nv_cvt_double_to_fp4(d, __NV_E2M1, cudaRoundNearest)
float e2m1_to_float(uint8_t v);    // exact; the high nibble is ignored

// E8M0: an unsigned biased exponent, value 2^(e-127); 0xFF is NaN, 0x00 is 2^-127 (there is no
// zero). Narrowing drops the sign and rounds |x| to a power of two: toward zero (floor of log2)
// or toward +infinity (ceiling), then clips below 2^-127 to 2^-127. Past 2^127 (infinity
// included) gives 2^127 under satfinite and NaN otherwise; a NaN gives 0xFF.
enum class E8m0Rounding { toward_zero, up };  // cudaRoundZero, cudaRoundPosInf
uint8_t float_to_e8m0(float f, Fp8Saturation s, E8m0Rounding r);    // __nv_cvt_float_to_e8m0
uint8_t double_to_e8m0(double d, Fp8Saturation s, E8m0Rounding r);  // __nv_cvt_double_to_e8m0
float e8m0_to_float(uint8_t v);  // exact (2^-127 is a float subnormal); 0xFF gives NaN
int e8m0_exponent(uint8_t v);     // v - 127, the power of two (0xFF excluded by the caller)

}  // namespace kl::quant
