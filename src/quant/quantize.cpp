// Quantizers (see quantize.h). Scale rules and their sources:
//  * MXFP8 / MXFP4, OCP Microscaling Formats (MX) Specification v1.0 (2023), its algorithm for
//    converting a vector of scalars to an MX block: shared exponent = floor(log2(max|V_i|)) - emax_elem, with
//    emax_elem = 8 for E4M3 (448 = 1.75 * 2^8) and 2 for E2M1 (6 = 1.5 * 2^2); X = 2^shared as
//    E8M0, clamped to its range; P_i = V_i / X rounded to the element format, saturating. floor(log2)
//    is the E8M0 conversion rounding toward zero; an all-zero block gets the smallest scale. The
//    floor leaves amax / X in [2^emax_elem, 2^(emax_elem+1)), so elements past maxnorm saturate:
//    up to 12.5% of amax lost for E4M3 (448 vs 512) and 25% for E2M1 (6 vs 8), by the spec.
//  * NVFP4 (NVIDIA's Blackwell format, as in TensorRT-LLM and Transformer Engine): E2M1 elements in
//    blocks of 16 with an E4M3 block scale and an fp32 tensor scale s_t = amax_tensor / (6 * 448);
//    the block scale is E4M3(amax_block / 6 / s_t) rounded to nearest and saturating, the element
//    scale is E4M3 value * s_t, and a block whose scale rounds to zero stores zeros.
#include "quant/quantize.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernelab/dtype.h"
#include "kernelab/error.h"
#include "quant/formats.h"

namespace kl::quant {

// ---------------------------------------------------------------- names

std::string_view format_name(Format f) {
  switch (f) {
    case Format::int8: return "int8";
    case Format::int4: return "int4";
    case Format::fp8_e4m3: return "fp8e4m3";
    case Format::fp8_e5m2: return "fp8e5m2";
    case Format::mxfp8: return "mxfp8";
    case Format::mxfp4: return "mxfp4";
    case Format::nvfp4: return "nvfp4";
  }
  return "unknown";
}

const std::vector<Format>& all_formats() {
  static const std::vector<Format> all = {Format::int8,  Format::int4,  Format::fp8_e4m3, Format::fp8_e5m2,
                                          Format::mxfp8, Format::mxfp4, Format::nvfp4};
  return all;
}

std::optional<Format> parse_format(std::string_view s) {
  for (Format f : all_formats())
    if (format_name(f) == s) return f;
  if (s == "e4m3" || s == "fp8") return Format::fp8_e4m3;
  if (s == "e5m2") return Format::fp8_e5m2;
  return std::nullopt;
}

bool is_integer(Format f) { return f == Format::int8 || f == Format::int4; }
bool is_block_format(Format f) { return f == Format::mxfp8 || f == Format::mxfp4 || f == Format::nvfp4; }

std::string_view zero_point_name(ZeroPoint z) {
  switch (z) {
    case ZeroPoint::none: return "none";
    case ZeroPoint::integer: return "gptq";
    case ZeroPoint::float_min: return "awq";
  }
  return "unknown";
}

std::string_view method_name(Method m) { return m == Method::rtn ? "rtn" : "clip"; }

namespace {

int64_t parse_positive(std::string_view s, std::string_view what) {
  int64_t v = 0;
  if (s.empty() || s.size() > 9) bad_input("granularity: bad " + std::string(what) + " '" + std::string(s) + "'");
  for (char c : s) {
    if (c < '0' || c > '9') bad_input("granularity: bad " + std::string(what) + " '" + std::string(s) + "'");
    v = v * 10 + (c - '0');
  }
  if (v < 1) bad_input("granularity: " + std::string(what) + " must be at least 1, got '" + std::string(s) + "'");
  return v;
}

}  // namespace

Granularity parse_granularity(std::string_view s) {
  Granularity g;
  if (s == "tensor") {
    g.kind = Granularity::Kind::tensor;
  } else if (s == "channel") {
    g.kind = Granularity::Kind::channel;
  } else if (s.rfind("group:", 0) == 0) {
    g.kind = Granularity::Kind::group;
    g.cols = parse_positive(s.substr(6), "group size");
  } else if (s.rfind("block:", 0) == 0) {
    const std::string_view dims = s.substr(6);
    const size_t x = dims.find('x');
    if (x == std::string_view::npos) bad_input("granularity: block wants RxC (block:128x128), got '" + std::string(s) + "'");
    g.kind = Granularity::Kind::block;
    g.rows = parse_positive(dims.substr(0, x), "block rows");
    g.cols = parse_positive(dims.substr(x + 1), "block columns");
  } else {
    bad_input("unknown granularity '" + std::string(s) + "' (tensor, channel, group:G, block:RxC)");
  }
  return g;
}

std::string granularity_name(const Granularity& g) {
  switch (g.kind) {
    case Granularity::Kind::tensor: return "tensor";
    case Granularity::Kind::channel: return "channel";
    case Granularity::Kind::group: return "group:" + std::to_string(g.cols);
    case Granularity::Kind::block: return "block:" + std::to_string(g.rows) + "x" + std::to_string(g.cols);
  }
  return "unknown";
}

Granularity default_granularity(Format f) {
  switch (f) {
    case Format::int4: return {Granularity::Kind::group, 1, 128};
    case Format::mxfp8:
    case Format::mxfp4: return {Granularity::Kind::group, 1, 32};
    case Format::nvfp4: return {Granularity::Kind::group, 1, 16};
    default: return {Granularity::Kind::channel, 1, 0};
  }
}

void validate(const QuantSpec& s) {
  if (!s.symmetric() && !is_integer(s.format))
    bad_input(std::string(format_name(s.format)) + " is symmetric: a zero point needs int8 or int4");
  const Granularity& g = s.granularity;
  if ((g.kind == Granularity::Kind::group || g.kind == Granularity::Kind::block) && (g.rows < 1 || g.cols < 1))
    bad_input("granularity " + granularity_name(g) + ": sizes must be at least 1");
  if (is_block_format(s.format)) {
    const Granularity own = default_granularity(s.format);
    if (g.kind != own.kind || g.cols != own.cols)
      bad_input(std::string(format_name(s.format)) + " has fixed blocks: granularity " + granularity_name(own) +
                ", not " + granularity_name(g));
  }
}

const std::vector<double>& clip_ratios(Format f) {
  static const std::vector<double> shrink = [] {
    std::vector<double> v;
    for (int i = 0; i <= 25; ++i) v.push_back(1.0 - 0.02 * i);
    return v;
  }();
  static const std::vector<double> mx = [] {
    std::vector<double> v = shrink;
    v.push_back(2.0);
    return v;
  }();
  return f == Format::mxfp8 || f == Format::mxfp4 ? mx : shrink;
}

ElementGrid element_grid(const QuantSpec& s) {
  ElementGrid g;
  const bool sym = s.symmetric();
  switch (s.format) {
    case Format::int8: g.qmin = sym ? -128 : 0, g.qmax = sym ? 127 : 255; break;
    case Format::int4: g.qmin = sym ? -8 : 0, g.qmax = sym ? 7 : 15; break;
    case Format::fp8_e4m3:
    case Format::mxfp8: g.maxnorm = 448, g.mantissa_bits = 3, g.min_exp = -6; break;
    case Format::fp8_e5m2: g.maxnorm = 57344, g.mantissa_bits = 2, g.min_exp = -14; break;
    case Format::mxfp4:
    case Format::nvfp4: g.maxnorm = 6, g.mantissa_bits = 1, g.min_exp = 0; break;
  }
  return g;
}

// ---------------------------------------------------------------- one tile

namespace {

struct TileFit {
  double scale = 1, zero = 0;
  uint8_t scale_code = 0;
};

// What every tile of one quantization shares.
struct Codec {
  QuantSpec spec;
  ElementGrid grid;
  double tensor_scale = 1.0;

  // Scale and zero for a tile whose values span [lo, hi], after a clip ratio has shrunk them.
  TileFit fit(double lo, double hi) const {
    TileFit t;
    const double amax = std::max(std::fabs(lo), std::fabs(hi));
    switch (spec.format) {
      case Format::int8:
      case Format::int4:
        if (spec.zero == ZeroPoint::none) {
          t.scale = fp32_scale(amax / grid.qmax);
        } else if (spec.zero == ZeroPoint::integer) {
          const double l = std::min(lo, 0.0), h = std::max(hi, 0.0);
          t.scale = fp32_scale((h - l) / grid.qmax);
          t.zero = std::clamp(std::nearbyint(-l / t.scale), 0.0, static_cast<double>(grid.qmax));
        } else {
          t.scale = fp32_scale((hi - lo) / grid.qmax);
          t.zero = static_cast<float>(-lo);
        }
        break;
      case Format::fp8_e4m3:
      case Format::fp8_e5m2: t.scale = fp32_scale(amax / grid.maxnorm); break;
      case Format::mxfp8:
      case Format::mxfp4: {
        const int emax_elem = spec.format == Format::mxfp8 ? 8 : 2;
        const int floor_log2 = double_to_e8m0(amax, Fp8Saturation::satfinite, E8m0Rounding::toward_zero);
        t.scale_code = static_cast<uint8_t>(std::max(floor_log2 - emax_elem, 0));
        t.scale = std::ldexp(1.0, e8m0_exponent(t.scale_code));
        break;
      }
      case Format::nvfp4:
        t.scale_code = double_to_e4m3(amax / 6.0 / tensor_scale, Fp8Saturation::satfinite);
        t.scale = static_cast<double>(e4m3_to_float(t.scale_code)) * tensor_scale;
        break;
    }
    return t;
  }

  uint8_t encode(const TileFit& t, double w) const {
    switch (spec.format) {
      case Format::int8:
      case Format::int4:
        if (spec.zero == ZeroPoint::none) {
          return spec.format == Format::int8 ? static_cast<uint8_t>(double_to_i8(w / t.scale))
                                             : static_cast<uint8_t>(double_to_i4(w / t.scale) & 0xF);
        } else {
          const double x = spec.zero == ZeroPoint::integer ? std::nearbyint(w / t.scale) + t.zero
                                                           : std::nearbyint((w + t.zero) / t.scale);
          return static_cast<uint8_t>(std::clamp(x, 0.0, static_cast<double>(grid.qmax)));
        }
      case Format::fp8_e4m3:
      case Format::mxfp8: return double_to_e4m3(w / t.scale, Fp8Saturation::satfinite);
      case Format::fp8_e5m2: return double_to_e5m2(w / t.scale, Fp8Saturation::satfinite);
      case Format::mxfp4: return double_to_e2m1(w / t.scale);
      case Format::nvfp4: return t.scale > 0 ? double_to_e2m1(w / t.scale) : 0;
    }
    return 0;
  }

  double decode(const TileFit& t, uint8_t c) const {
    switch (spec.format) {
      case Format::int8:
      case Format::int4:
        if (spec.zero == ZeroPoint::none) {
          const int q = spec.format == Format::int8 ? static_cast<int8_t>(c) : ((c & 0xF) ^ 8) - 8;
          return t.scale * q;
        }
        return spec.zero == ZeroPoint::integer ? t.scale * (c - t.zero) : t.scale * c - t.zero;
      case Format::fp8_e4m3:
      case Format::mxfp8: return t.scale * e4m3_to_float(c);
      case Format::fp8_e5m2: return t.scale * e5m2_to_float(c);
      case Format::mxfp4:
      case Format::nvfp4: return t.scale * e2m1_to_float(c);
    }
    return 0;
  }

  // An fp32 scale; a tile of zeros (or one too small for fp32) gets 1, so its codes are zeros.
  static double fp32_scale(double s) {
    const float f = static_cast<float>(s);
    return f > 0 && std::isfinite(f) ? static_cast<double>(f) : 1.0;
  }
};

}  // namespace

double Quantized::value(int64_t r, int64_t c) const {
  const int64_t t = tile_of(r, c);
  Codec codec{spec, element_grid(spec), tensor_scale};
  TileFit fit{scales[static_cast<size_t>(t)], zeros.empty() ? 0.0 : zeros[static_cast<size_t>(t)], 0};
  return codec.decode(fit, codes[static_cast<size_t>(r * cols + c)]);
}

// ---------------------------------------------------------------- the whole matrix

Quantized quantize(const Matrix& w, const QuantSpec& spec) {
  validate(spec);
  if (w.rows < 1 || w.cols < 1) bad_input("quantize: empty matrix");
  Quantized q;
  q.spec = spec;
  q.rows = w.rows;
  q.cols = w.cols;
  const Granularity& g = spec.granularity;
  switch (g.kind) {
    case Granularity::Kind::tensor: q.tile_rows = w.rows, q.tile_cols = w.cols; break;
    case Granularity::Kind::channel: q.tile_rows = 1, q.tile_cols = w.cols; break;
    case Granularity::Kind::group: q.tile_rows = 1, q.tile_cols = g.cols; break;
    case Granularity::Kind::block: q.tile_rows = g.rows, q.tile_cols = g.cols; break;
  }
  q.tiles_across = (w.cols + q.tile_cols - 1) / q.tile_cols;
  q.tiles_down = (w.rows + q.tile_rows - 1) / q.tile_rows;
  const int64_t tiles = q.tiles_across * q.tiles_down;

  Codec codec{spec, element_grid(spec), 1.0};
  if (spec.format == Format::nvfp4) {
    double amax = 0;
    for (double x : w.v) amax = std::max(amax, std::fabs(x));
    codec.tensor_scale = Codec::fp32_scale(amax / (6.0 * 448.0));
  }
  q.tensor_scale = codec.tensor_scale;
  q.codes.assign(w.v.size(), 0);
  q.scales.assign(static_cast<size_t>(tiles), 1.0);
  q.clip.assign(static_cast<size_t>(tiles), 1.0);
  if (is_block_format(spec.format)) q.scale_codes.assign(static_cast<size_t>(tiles), 0);
  if (!spec.symmetric()) q.zeros.assign(static_cast<size_t>(tiles), 0.0);
  const std::vector<double> rtn_only = {1.0};
  const std::vector<double>& ratios = spec.method == Method::clip ? clip_ratios(spec.format) : rtn_only;

#pragma omp parallel for schedule(dynamic, 16)
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t r0 = (t / q.tiles_across) * q.tile_rows, c0 = (t % q.tiles_across) * q.tile_cols;
    const int64_t r1 = std::min(r0 + q.tile_rows, w.rows), c1 = std::min(c0 + q.tile_cols, w.cols);
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = c0; c < c1; ++c) lo = std::min(lo, w.at(r, c)), hi = std::max(hi, w.at(r, c));
    TileFit best;
    double best_err = std::numeric_limits<double>::infinity(), best_ratio = 1.0;
    for (double ratio : ratios) {
      const TileFit fit = codec.fit(lo * ratio, hi * ratio);
      double err = 0;
      if (ratios.size() > 1) {
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t c = c0; c < c1; ++c) {
            const double d = w.at(r, c) - codec.decode(fit, codec.encode(fit, w.at(r, c)));
            err += d * d;
          }
      }
      if (err < best_err) best = fit, best_err = err, best_ratio = ratio;  // strict: ties keep the larger ratio
    }
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = c0; c < c1; ++c) q.codes[static_cast<size_t>(r * w.cols + c)] = codec.encode(best, w.at(r, c));
    q.scales[static_cast<size_t>(t)] = best.scale;
    q.clip[static_cast<size_t>(t)] = best_ratio;
    if (!q.scale_codes.empty()) q.scale_codes[static_cast<size_t>(t)] = best.scale_code;
    if (!q.zeros.empty()) q.zeros[static_cast<size_t>(t)] = best.zero;
  }
  return q;
}

Matrix dequantize(const Quantized& q) {
  Matrix m(q.rows, q.cols);
  Codec codec{q.spec, element_grid(q.spec), q.tensor_scale};
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < q.rows; ++r)
    for (int64_t c = 0; c < q.cols; ++c) {
      const size_t t = static_cast<size_t>(q.tile_of(r, c));
      const TileFit fit{q.scales[t], q.zeros.empty() ? 0.0 : q.zeros[t], 0};
      m.at(r, c) = codec.decode(fit, q.codes[static_cast<size_t>(r * q.cols + c)]);
    }
  return m;
}

}  // namespace kl::quant
