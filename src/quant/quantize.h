// Weight quantizers: int8, int4, fp8 (e4m3, e5m2) with an fp32 scale per tile, and the block
// formats MXFP8, MXFP4 (OCP MX v1.0) and NVFP4; round-to-nearest or a per-tile clipping search.
//
// Every granularity is a tile of the N x K weight (rows are output channels, K the reduction):
// tensor = N x K, channel = 1 x K, group:G = 1 x G along K, block:RxC = R x C. Tiles at the right
// and bottom edges may be partial (K not a multiple of G, say): such a tile takes its scale (and
// zero) from the elements it has and nothing else, which for symmetric and integer-zero formats is
// the same as padding it with zeros. MX formats are group:32 and NVFP4 group:16, fixed.
//
// Zero points (asymmetric int8/int4; the codes are then unsigned, 0..2^b-1):
//  * integer (GPTQ-style): range [min(lo,0), max(hi,0)], s = range / (2^b-1),
//    q_z = round(-min/s) an integer code, q = clamp(round(w/s) + q_z), w ~ s * (q - q_z);
//  * float_min (AWQ-style as the issue defines it, the form of llama.cpp's Q4_1 d*q + m):
//    s = (hi - lo) / (2^b-1), z = -lo kept as an fp32 value, q = clamp(round((w + z)/s)),
//    w ~ s * q - z.
// Symmetric int: s = amax / (2^(b-1) - 1), codes in [-2^(b-1), 2^(b-1) - 1] (the extra negative
// code is reachable only when clipping). fp8: s = amax / maxnorm, elements saturate.
// Scales of int and fp8 tiles are rounded to fp32, as a kernel would store them.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quant/matrix.h"

namespace kl::quant {

enum class Format { int8, int4, fp8_e4m3, fp8_e5m2, mxfp8, mxfp4, nvfp4 };
std::string_view format_name(Format f);  // "int8", "int4", "fp8e4m3", "fp8e5m2", "mxfp8", "mxfp4", "nvfp4"
std::optional<Format> parse_format(std::string_view s);
const std::vector<Format>& all_formats();
bool is_integer(Format f);
bool is_block_format(Format f);  // MXFP8, MXFP4, NVFP4: tile shape and scale rule fixed

struct Granularity {
  enum class Kind { tensor, channel, group, block };
  Kind kind = Kind::channel;
  int64_t rows = 1, cols = 0;  // group: 1 x G; block: R x C; unused for tensor and channel
};
Granularity parse_granularity(std::string_view s);  // "tensor", "channel", "group:G", "block:RxC"; BadInput
std::string granularity_name(const Granularity& g);  // the same spelling

enum class ZeroPoint { none, integer, float_min };  // none = symmetric
std::string_view zero_point_name(ZeroPoint z);      // "none", "gptq", "awq"
enum class Method { rtn, clip };
std::string_view method_name(Method m);

struct QuantSpec {
  Format format = Format::int8;
  Granularity granularity;
  ZeroPoint zero = ZeroPoint::none;
  Method method = Method::rtn;
  bool symmetric() const { return zero == ZeroPoint::none; }
};
// BadInput for what no format supports: a zero point on a float format, a group or block of size
// < 1, a block format with a tile other than its own.
void validate(const QuantSpec& s);
Granularity default_granularity(Format f);  // int8/fp8: channel, int4: group:128, MX: group:32, NVFP4: group:16

// The ratios a tile's range is scaled by in the clip search, 1.0 first (which is RTN) down to 0.5
// in steps of 0.02; for MXFP8 and MXFP4 also 2.0, the power-of-two scale above OCP's, whose floor
// rule saturates a group whose amax lands in (maxnorm, 2^(emax+1))·X: up to 25% of it for E2M1
// ((6, 8)·X), 12.5% for E4M3 ((448, 512)·X). A tile keeps the first ratio with the least squared
// error, so clip is never worse than RTN on a tile.
const std::vector<double>& clip_ratios(Format f);

struct Quantized {
  QuantSpec spec;
  int64_t rows = 0, cols = 0;
  int64_t tile_rows = 0, tile_cols = 0, tiles_across = 0, tiles_down = 0;
  std::vector<uint8_t> codes;        // per element: the integer's two's complement byte (int4: low
                                     // nibble), the unsigned code, or the fp8 / E2M1 bit pattern
  std::vector<double> scales;        // per tile: the scale dequantization multiplies by
  std::vector<uint8_t> scale_codes;  // per tile: E8M0 (MX) or E4M3 (NVFP4) bits; empty otherwise
  std::vector<double> zeros;         // per tile: q_z (integer) or z (float_min); empty if symmetric
  std::vector<double> clip;          // per tile: the ratio used (1 for RTN; 2 an MX scale one power of two up)
  double tensor_scale = 1.0;         // NVFP4's fp32 per-tensor scale, 1 otherwise

  int64_t tile_of(int64_t r, int64_t c) const { return (r / tile_rows) * tiles_across + c / tile_cols; }
  double value(int64_t r, int64_t c) const;  // the dequantized element
};

Quantized quantize(const Matrix& w, const QuantSpec& spec);
Matrix dequantize(const Quantized& q);

// The element grid of a format (for bounds and tests): largest finite magnitude, explicit mantissa
// bits and smallest normal exponent; integers report their code range.
struct ElementGrid {
  double maxnorm = 0;  // float formats
  int mantissa_bits = 0, min_exp = 0;
  int qmin = 0, qmax = 0;  // integer formats, for the spec's symmetry
};
ElementGrid element_grid(const QuantSpec& s);

}  // namespace kl::quant
