// Quantizers (quant/quantize.h): quantize -> dequantize round trips for every format,
// granularity, symmetry and method on odd shapes, each element held to its format's worst-case
// bound; the scale rules of MX and NVFP4 checked independently; partial tiles; clip never worse
// than RTN; SmoothQuant. Inputs: Student-t(3) weights from a fixed seed (heavy tails, never zero).
#include "quant/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernelab/dtype.h"
#include "kernelab/error.h"
#include "quant/formats.h"
#include "quant/metrics.h"
#include "quant/smoothquant.h"

namespace {

using namespace kl::quant;
using Kind = Granularity::Kind;

Matrix student_t(int64_t rows, int64_t cols, uint64_t seed, double scale = 1.0) {
  std::mt19937_64 gen(seed);
  std::student_t_distribution<double> t(3.0);
  Matrix m(rows, cols);
  for (double& x : m.v) {
    do x = scale * t(gen);
    while (x == 0.0);
  }
  return m;
}

std::string describe(const QuantSpec& s, const Matrix& w) {
  return std::string(format_name(s.format)) + " " + granularity_name(s.granularity) + " " +
         std::string(zero_point_name(s.zero)) + " " + std::string(method_name(s.method)) + " on " +
         std::to_string(w.rows) + "x" + std::to_string(w.cols);
}

// Every element against its format's worst case:
//  * integers: with x the element on the code axis (w/s, w/s + q_z or (w + z)/s), an x inside
//    [qmin - 1/2, qmax + 1/2] is within s/2; outside (only clipping puts it there) it dequantizes
//    to the nearest end code;
//  * floats: with x = w/s, a |x| up to maxnorm plus half an ulp is within half an ulp, i.e.
//    |x| * 2^-(m+1) for normals and 2^(emin-m-1) in the subnormal range; past that it saturates.
// RTN on the int and fp8 formats never clips (their scale maps amax to the largest code), so
// there every element must be inside the bound.
void check_round_trip(const Matrix& w, const QuantSpec& spec) {
  const Quantized q = quantize(w, spec);
  const Matrix d = dequantize(q);
  const ElementGrid g = element_grid(spec);
  const bool may_clip = spec.method == Method::clip || is_block_format(spec.format);
  int64_t bad = 0, outside = 0;
  for (int64_t r = 0; r < w.rows; ++r)
    for (int64_t c = 0; c < w.cols; ++c) {
      const size_t t = static_cast<size_t>(q.tile_of(r, c));
      const double s = q.scales[t], x0 = w.at(r, c), y = d.at(r, c);
      ASSERT_EQ(y, q.value(r, c));
      bool ok;
      if (is_integer(spec.format)) {
        const double z = q.zeros.empty() ? 0.0 : q.zeros[t];
        const double x = spec.zero == ZeroPoint::float_min ? (x0 + z) / s : x0 / s + z;
        if (x >= g.qmin - 0.5 && x <= g.qmax + 0.5) {
          ok = std::fabs(x0 - y) <= s / 2 * (1 + 1e-9);
        } else {
          ++outside;
          const double end = x < g.qmin ? g.qmin : g.qmax;
          const double want = spec.zero == ZeroPoint::float_min ? s * end - z : s * (end - z);
          ok = y == want;
        }
      } else if (s == 0) {  // NVFP4 block whose E4M3 scale underflowed: zeros
        ok = y == 0;
      } else {
        const double x = x0 / s, yx = y / s;
        const double half_ulp_rel = std::ldexp(1.0, -(g.mantissa_bits + 1));
        if (std::fabs(x) <= g.maxnorm * (1 + half_ulp_rel)) {
          const double bound = std::max(std::fabs(x) * half_ulp_rel, std::ldexp(1.0, g.min_exp - g.mantissa_bits - 1));
          ok = std::fabs(x - yx) <= bound * (1 + 1e-12);
        } else {
          ++outside;
          ok = yx == std::copysign(g.maxnorm, x);
        }
      }
      if (!ok && bad++ < 5)
        ADD_FAILURE() << describe(spec, w) << ": element (" << r << "," << c << ") " << x0 << " -> " << y << ", scale " << s;
    }
  EXPECT_EQ(bad, 0) << describe(spec, w);
  if (!may_clip) { EXPECT_EQ(outside, 0) << describe(spec, w) << ": RTN clipped"; }
}

std::vector<Granularity> all_granularities() {
  return {{Kind::tensor, 1, 0},   {Kind::channel, 1, 0},  {Kind::group, 1, 32},     {Kind::group, 1, 64},
          {Kind::group, 1, 128},  {Kind::block, 1, 128},  {Kind::block, 128, 128}};
}

std::vector<Matrix> odd_shapes() {
  return {student_t(7, 333, 1), student_t(130, 259, 2, 0.02), student_t(1, 1, 3), student_t(3, 1000, 4, 50.0)};
}

TEST(QuantRoundTrip, IntegerEveryGranularitySymmetryAndMethod) {
  for (const Matrix& w : odd_shapes())
    for (Format f : {Format::int8, Format::int4})
      for (const Granularity& g : all_granularities())
        for (ZeroPoint z : {ZeroPoint::none, ZeroPoint::integer, ZeroPoint::float_min})
          for (Method m : {Method::rtn, Method::clip}) check_round_trip(w, {f, g, z, m});
}

TEST(QuantRoundTrip, Fp8EveryGranularityAndMethod) {
  for (const Matrix& w : odd_shapes())
    for (Format f : {Format::fp8_e4m3, Format::fp8_e5m2})
      for (const Granularity& g : all_granularities())
        for (Method m : {Method::rtn, Method::clip}) check_round_trip(w, {f, g, ZeroPoint::none, m});
}

TEST(QuantRoundTrip, BlockFormats) {
  for (const Matrix& w : odd_shapes())
    for (Format f : {Format::mxfp8, Format::mxfp4, Format::nvfp4})
      for (Method m : {Method::rtn, Method::clip}) check_round_trip(w, {f, default_granularity(f), ZeroPoint::none, m});
  // Values spanning many binades inside one block exercise the E2M1/E4M3 subnormals and E8M0's
  // low end.
  Matrix wide(4, 96);
  for (int64_t i = 0; i < 4 * 96; ++i) wide.v[static_cast<size_t>(i)] = std::ldexp(1.0 + (i % 7) / 8.0, (i % 40) - 130) * ((i % 3) ? 1 : -1);
  for (Format f : {Format::mxfp8, Format::mxfp4, Format::nvfp4}) check_round_trip(wide, {f, default_granularity(f)});
}

// OCP MX v1.0's conversion: X = 2^(floor(log2 amax) - emax_elem), here with floor(log2) from
// std::ilogb, independent of the E8M0 conversion the quantizer uses.
TEST(QuantScaleRule, MxSharedExponent) {
  const Matrix w = student_t(5, 333, 11, 0.01);
  for (Format f : {Format::mxfp8, Format::mxfp4}) {
    const Quantized q = quantize(w, {f, default_granularity(f)});
    const int emax = f == Format::mxfp8 ? 8 : 2;
    ASSERT_EQ(q.tiles_across, 11);  // 333 = 10 * 32 + 13: the last block is partial
    for (int64_t r = 0; r < w.rows; ++r)
      for (int64_t b = 0; b < q.tiles_across; ++b) {
        double amax = 0;
        for (int64_t c = b * 32; c < std::min<int64_t>((b + 1) * 32, w.cols); ++c) amax = std::max(amax, std::fabs(w.at(r, c)));
        const int shared = std::max(std::ilogb(amax) - emax, -127);
        const size_t t = static_cast<size_t>(r * q.tiles_across + b);
        EXPECT_EQ(q.scales[t], std::ldexp(1.0, shared)) << format_name(f) << " row " << r << " block " << b;
        EXPECT_EQ(q.scale_codes[t], shared + 127);
        EXPECT_EQ(kl::quant::e8m0_to_float(q.scale_codes[t]), static_cast<float>(q.scales[t]));
      }
  }
}

// NVFP4: s_t = amax_tensor / (6 * 448) in fp32, and each block's E4M3 scale is the E4M3 value
// nearest amax_block / 6 / s_t (searched over all finite codes here).
TEST(QuantScaleRule, Nvfp4TwoLevelScale) {
  const Matrix w = student_t(6, 250, 12, 3.0);
  const Quantized q = quantize(w, {Format::nvfp4, default_granularity(Format::nvfp4)});
  double amax = 0;
  for (double x : w.v) amax = std::max(amax, std::fabs(x));
  EXPECT_EQ(q.tensor_scale, static_cast<double>(static_cast<float>(amax / 2688.0)));
  ASSERT_EQ(q.tiles_across, 16);  // 250 = 15 * 16 + 10
  for (int64_t r = 0; r < w.rows; ++r)
    for (int64_t b = 0; b < q.tiles_across; ++b) {
      double bmax = 0;
      for (int64_t c = b * 16; c < std::min<int64_t>((b + 1) * 16, w.cols); ++c) bmax = std::max(bmax, std::fabs(w.at(r, c)));
      const double target = bmax / 6.0 / q.tensor_scale;
      const size_t t = static_cast<size_t>(r * q.tiles_across + b);
      const double got = kl::e4m3_to_float(q.scale_codes[t]);
      for (unsigned c = 0; c < 0x7F; ++c) EXPECT_LE(std::fabs(got - target), std::fabs(kl::e4m3_to_float(static_cast<uint8_t>(c)) - target));
      EXPECT_EQ(q.scales[t], got * q.tensor_scale);
    }
}

TEST(QuantHand, IntegerCodes) {
  Matrix w(1, 3);
  w.v = {254, -100, 3};  // s = 2: codes 127, -50, 2 (1.5 ties to even)
  Quantized q = quantize(w, {Format::int8, {Kind::channel}});
  EXPECT_EQ(q.scales[0], 2.0);
  EXPECT_EQ(static_cast<int8_t>(q.codes[0]), 127);
  EXPECT_EQ(static_cast<int8_t>(q.codes[1]), -50);
  EXPECT_EQ(static_cast<int8_t>(q.codes[2]), 2);
  w.v = {-1, 0.5, 14};  // GPTQ: s = 15/15 = 1, q_z = 1; 0.5 rounds to 0 (even), code 1
  q = quantize(w, {Format::int4, {Kind::channel}, ZeroPoint::integer});
  EXPECT_EQ(q.scales[0], 1.0);
  EXPECT_EQ(q.zeros[0], 1.0);
  EXPECT_EQ(q.codes, (std::vector<uint8_t>{0, 1, 15}));
  EXPECT_EQ(dequantize(q).v, (std::vector<double>{-1, 0, 14}));
  w.v = {1, 2.2, 16};  // AWQ-style: s = 15/15 = 1, z = -1 (the minimum, not forced to include 0)
  q = quantize(w, {Format::int4, {Kind::channel}, ZeroPoint::float_min});
  EXPECT_EQ(q.zeros[0], -1.0);
  EXPECT_EQ(q.codes, (std::vector<uint8_t>{0, 1, 15}));
  EXPECT_EQ(dequantize(q).v, (std::vector<double>{1, 2, 16}));
  w.v = {-7, 3.5, 0.2};  // int4 symmetric: s = 1; 3.5 ties to 4; codes are nibbles
  q = quantize(w, {Format::int4, {Kind::tensor}});
  EXPECT_EQ(q.codes, (std::vector<uint8_t>{0x9, 0x4, 0x0}));
  EXPECT_EQ(dequantize(q).v, (std::vector<double>{-7, 4, 0}));
}

// The last group of a row (K % G columns) is quantized from its own elements only: the same codes
// and scales as quantizing those columns alone. For symmetric formats that is also what padding
// the row with zeros to a multiple of G gives.
TEST(QuantPartialTiles, LastGroupUsesItsOwnElements) {
  const Matrix w = student_t(9, 333, 21);
  const std::vector<QuantSpec> specs = {
      {Format::int4, {Kind::group, 1, 128}},
      {Format::int4, {Kind::group, 1, 128}, ZeroPoint::integer},
      {Format::int4, {Kind::group, 1, 128}, ZeroPoint::float_min, Method::clip},
      {Format::int8, {Kind::group, 1, 64}},
      {Format::fp8_e4m3, {Kind::block, 1, 128}},
      {Format::mxfp4, default_granularity(Format::mxfp4)},
      {Format::nvfp4, default_granularity(Format::nvfp4)}};
  for (const QuantSpec& spec : specs) {
    const int64_t g = spec.granularity.cols, tail = w.cols % g, start = w.cols - tail;
    ASSERT_GT(tail, 0);
    Matrix slice(w.rows, tail);
    for (int64_t r = 0; r < w.rows; ++r)
      for (int64_t c = 0; c < tail; ++c) slice.at(r, c) = w.at(r, start + c);
    const Quantized full = quantize(w, spec);
    Quantized part = quantize(slice, spec);
    if (spec.format == Format::nvfp4) continue;  // its tensor scale comes from the whole tensor: checked below
    for (int64_t r = 0; r < w.rows; ++r) {
      const size_t tf = static_cast<size_t>(full.tile_of(r, start)), tp = static_cast<size_t>(part.tile_of(r, 0));
      EXPECT_EQ(full.scales[tf], part.scales[tp]) << describe(spec, w) << " row " << r;
      if (!full.zeros.empty()) { EXPECT_EQ(full.zeros[tf], part.zeros[tp]); }
      for (int64_t c = 0; c < tail; ++c)
        EXPECT_EQ(full.codes[static_cast<size_t>(r * w.cols + start + c)], part.codes[static_cast<size_t>(r * tail + c)]);
    }
    if (spec.symmetric()) {
      Matrix padded(w.rows, start + g);
      for (int64_t r = 0; r < w.rows; ++r)
        for (int64_t c = 0; c < w.cols; ++c) padded.at(r, c) = w.at(r, c);
      const Quantized p = quantize(padded, spec);
      for (int64_t r = 0; r < w.rows; ++r)
        for (int64_t c = 0; c < w.cols; ++c) EXPECT_EQ(p.codes[static_cast<size_t>(r * padded.cols + c)], full.codes[static_cast<size_t>(r * w.cols + c)]);
    }
  }
  // NVFP4 with the tensor's amax inside the partial block, so both quantizations share s_t.
  Matrix w2 = w;
  w2.at(0, 330) = 1000.0;
  Matrix slice(w2.rows, 333 - 320);
  for (int64_t r = 0; r < w2.rows; ++r)
    for (int64_t c = 0; c < slice.cols; ++c) slice.at(r, c) = w2.at(r, 320 + c);
  const QuantSpec nv{Format::nvfp4, default_granularity(Format::nvfp4)};
  const Quantized full = quantize(w2, nv), part = quantize(slice, nv);
  ASSERT_EQ(full.tensor_scale, part.tensor_scale);
  for (int64_t r = 0; r < w2.rows; ++r)
    for (int64_t c = 0; c < slice.cols; ++c)
      EXPECT_EQ(full.codes[static_cast<size_t>(r * w2.cols + 320 + c)], part.codes[static_cast<size_t>(r * slice.cols + c)]);
}

TEST(QuantPartialTiles, Block128x128Edges) {
  const Matrix w = student_t(130, 259, 22);
  const QuantSpec spec{Format::fp8_e4m3, {Kind::block, 128, 128}};
  const Quantized q = quantize(w, spec);
  EXPECT_EQ(q.tiles_down, 2);
  EXPECT_EQ(q.tiles_across, 3);
  Matrix corner(2, 3);  // rows 128..129, columns 256..258
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t c = 0; c < 3; ++c) corner.at(r, c) = w.at(128 + r, 256 + c);
  const Quantized qc = quantize(corner, spec);
  EXPECT_EQ(q.scales.back(), qc.scales[0]);
}

double tile_sse(const Matrix& w, const Matrix& d, const Quantized& q, int64_t t) {
  double s = 0;
  for (int64_t r = 0; r < w.rows; ++r)
    for (int64_t c = 0; c < w.cols; ++c)
      if (q.tile_of(r, c) == t) s += (w.at(r, c) - d.at(r, c)) * (w.at(r, c) - d.at(r, c));
  return s;
}

// Ratio 1.0 is RTN and a tile keeps the least error over the ratios: clip's squared error is
// never above RTN's on any tile, and on heavy-tailed weights it is below on some. OCP's MX scale
// rule, X = 2^(floor(log2 amax) - emax), saturates a group whose amax lands in (6, 8)·X for E2M1
// ((448, 512)·X for E4M3): there the search takes the power of two above (ratio 2) for some groups.
TEST(QuantClip, NeverWorseThanRtnOnAnyTileAndMxTakesTheScaleAboveOcps) {
  const Matrix w = student_t(24, 320, 7);
  for (QuantSpec spec : std::vector<QuantSpec>{{Format::int4, {Kind::group, 1, 32}},
                                               {Format::int4, {Kind::group, 1, 128}, ZeroPoint::integer},
                                               {Format::int4, {Kind::group, 1, 64}, ZeroPoint::float_min},
                                               {Format::int8, {Kind::channel}},
                                               {Format::fp8_e4m3, {Kind::block, 1, 128}},
                                               {Format::mxfp8, default_granularity(Format::mxfp8)},
                                               {Format::mxfp4, default_granularity(Format::mxfp4)},
                                               {Format::nvfp4, default_granularity(Format::nvfp4)}}) {
    const Quantized rtn = quantize(w, spec);
    spec.method = Method::clip;
    const Quantized clip = quantize(w, spec);
    const Matrix dr = dequantize(rtn), dc = dequantize(clip);
    int better = 0, up = 0;
    for (int64_t t = 0; t < rtn.tiles_across * rtn.tiles_down; ++t) {
      const double er = tile_sse(w, dr, rtn, t), ec = tile_sse(w, dc, clip, t);
      const double ratio = clip.clip[static_cast<size_t>(t)];
      EXPECT_LE(ec, er) << describe(spec, w) << " tile " << t;
      better += ec < er;
      EXPECT_EQ(ec < er, ratio != 1.0);
      if (ratio > 1.0) {
        ++up;
        EXPECT_EQ(ratio, 2.0);
        EXPECT_EQ(clip.scales[static_cast<size_t>(t)], 2 * rtn.scales[static_cast<size_t>(t)]) << describe(spec, w) << " tile " << t;
      }
    }
    if (spec.format == Format::int4) { EXPECT_GT(better, 0) << describe(spec, w); }
    if (spec.format == Format::mxfp4 || spec.format == Format::mxfp8) {
      EXPECT_GT(up, 0) << describe(spec, w) << ": no group's search took the scale above OCP's";
    } else {
      EXPECT_EQ(up, 0) << describe(spec, w);
    }
  }
}

TEST(QuantSpecs, RefusedSpecsAndGranularities) {
  EXPECT_THROW(quantize(student_t(2, 8, 1), {Format::fp8_e4m3, {Kind::channel}, ZeroPoint::integer}), kl::BadInput);
  EXPECT_THROW(quantize(student_t(2, 8, 1), {Format::mxfp4, {Kind::group, 1, 64}}), kl::BadInput);
  EXPECT_THROW(quantize(student_t(2, 8, 1), {Format::nvfp4, {Kind::channel}}), kl::BadInput);
  for (const char* s : {"", "group", "group:", "group:0", "group:-3", "group:12a", "block:128", "block:0x4", "block:4x", "rows", "block:1x1x1"})
    EXPECT_THROW(parse_granularity(s), kl::BadInput) << s;
  for (const char* s : {"tensor", "channel", "group:32", "block:1x128", "block:128x128"}) EXPECT_EQ(granularity_name(parse_granularity(s)), s);
  for (Format f : all_formats()) EXPECT_EQ(parse_format(format_name(f)), f);
  EXPECT_FALSE(parse_format("int3").has_value());
}

TEST(QuantSmooth, ScalesPreserveTheProductAndHelpW8A8) {
  Matrix x = student_t(16, 96, 41), w = student_t(40, 96, 42, 0.05);
  for (int64_t j : {5, 17, 60})  // outlier activation channels, 50x
    for (int64_t r = 0; r < x.rows; ++r) x.at(r, j) *= 50;
  const std::vector<double> s = smooth_scales(x, w, 0.5);
  for (int64_t j = 0; j < x.cols; ++j) {
    double xm = 0, wm = 0;
    for (int64_t r = 0; r < x.rows; ++r) xm = std::max(xm, std::fabs(x.at(r, j)));
    for (int64_t r = 0; r < w.rows; ++r) wm = std::max(wm, std::fabs(w.at(r, j)));
    EXPECT_NEAR(s[static_cast<size_t>(j)], std::sqrt(xm) / std::sqrt(wm), 1e-12 * s[static_cast<size_t>(j)]);
  }
  const std::vector<double> s1 = smooth_scales(x, w, 1.0);
  EXPECT_NEAR(s1[5], [&] { double m = 0; for (int64_t r = 0; r < x.rows; ++r) m = std::max(m, std::fabs(x.at(r, 5))); return m; }(), 1e-9);
  EXPECT_THROW(smooth_scales(x, w, 1.5), kl::BadInput);

  const Matrix ref = matmul_nt(x, w);
  Matrix xs = x, ws = w;
  smooth_apply(xs, ws, s);
  const Matrix same = matmul_nt(xs, ws);
  for (size_t i = 0; i < ref.v.size(); ++i) EXPECT_NEAR(same.v[i], ref.v[i], 1e-10 * (1 + std::fabs(ref.v[i])));

  // W8A8: int8 per-token activations, int8 per-channel weights; smoothing lowers the GEMM error.
  auto w8a8 = [](const Matrix& a, const Matrix& b) {
    return matmul_nt(dequantize(quantize(a, {Format::int8, {Kind::channel}})), dequantize(quantize(b, {Format::int8, {Kind::channel}})));
  };
  const double plain = rel_err(ref.v, w8a8(x, w).v), smoothed = rel_err(ref.v, w8a8(xs, ws).v);
  EXPECT_LT(smoothed, plain);
}

TEST(QuantMetrics, HandValues) {
  const std::vector<double> a = {1, 2, 3}, b = {1, 2, 4};
  EXPECT_DOUBLE_EQ(calc_diff(a, a), 0.0);
  EXPECT_DOUBLE_EQ(calc_diff(a, b), 1.0 - 2.0 * 17.0 / (14.0 + 21.0));
  EXPECT_DOUBLE_EQ(rel_err(a, b), 1.0 / 6.0);
  EXPECT_DOUBLE_EQ(cosine(a, b), 17.0 / std::sqrt(14.0 * 21.0));
  EXPECT_DOUBLE_EQ(snr_db(a, b), 10.0 * std::log10(14.0));
  EXPECT_DOUBLE_EQ(max_abs_err(a, b), 1.0);
  EXPECT_TRUE(std::isinf(snr_db(a, a)));
}

}  // namespace
