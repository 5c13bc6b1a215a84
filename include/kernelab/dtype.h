// Number formats: the dtypes kernelab knows and bit-exact conversions to and from float.
// The conversions follow the CUDA toolkit's host paths (cuda_fp16.h, cuda_bf16.h, cuda_fp8.h):
// round-to-nearest-even, each format's NaN/infinity rules, fp8 saturating or not.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kl {

// i32 is an index type (a paged KV cache's block table), not a number format of the kernels.
enum class DType : uint8_t { f64, f32, f16, bf16, e4m3, e5m2, i8, i4, i32 };

std::string_view dtype_name(DType t);                        // "fp32", "bf16", "fp8e4m3", "int4", ...
std::optional<DType> parse_dtype(std::string_view s);        // accepts the names and common aliases
const std::vector<DType>& all_dtypes();
int dtype_bits(DType t);                                     // storage bits per element (int4: 4)
int64_t dtype_storage_bytes(DType t, int64_t count);         // int4 packs two per byte
bool dtype_is_float(DType t);
double dtype_epsilon(DType t);                               // unit roundoff 2^-p (0 for integers)

// fp16 (IEEE binary16) and bf16, as raw bit patterns.
uint16_t float_to_f16(float f);     // __float2half_rn
uint16_t double_to_f16(double d);   // __double2half (one rounding, not via float)
float f16_to_float(uint16_t h);     // __half2float
uint16_t float_to_bf16(float f);    // __float2bfloat16_rn
uint16_t double_to_bf16(double d);  // __double2bfloat16
float bf16_to_float(uint16_t b);    // __bfloat162float

// fp8: e4m3 (no infinities, NaN = S.1111.111) and e5m2 (IEEE-like), as raw bytes.
enum class Fp8Saturation { none, satfinite };  // __NV_NOSAT, __NV_SATFINITE
uint8_t float_to_e4m3(float f, Fp8Saturation s);   // __nv_cvt_float_to_fp8(f, s, __NV_E4M3)
uint8_t double_to_e4m3(double d, Fp8Saturation s); // __nv_cvt_double_to_fp8
uint8_t float_to_e5m2(float f, Fp8Saturation s);
uint8_t double_to_e5m2(double d, Fp8Saturation s);
float e4m3_to_float(uint8_t v);                    // exact (via __nv_cvt_fp8_to_halfraw)
float e5m2_to_float(uint8_t v);

// Integers: round to nearest even and saturate, NaN to 0 (PTX cvt.rni.sat).
int8_t double_to_i8(double d);
int8_t double_to_i4(double d);  // range [-8, 7]
// int4 storage: element i sits in byte i/2, the low nibble for even i.
int8_t i4_get(const uint8_t* base, int64_t i);
void i4_set(uint8_t* base, int64_t i, int8_t v);

// Element access by dtype, for references, checks and input generation (not for fast paths).
double load_as_double(DType t, const void* base, int64_t i);
void store_from_double(DType t, void* base, int64_t i, double v);  // fp8 stores saturate

}  // namespace kl
