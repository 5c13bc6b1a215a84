#include "quant/eval.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <numbers>

#include "kernelab/error.h"
#include "kernelab/rng.h"
#include "quant/metrics.h"
#include "quant/smoothquant.h"

namespace kl::quant {

Distribution parse_distribution(std::string_view s) {
  if (s == "normal") return {Distribution::Kind::normal, 0};
  if (s.rfind("student-t:", 0) == 0) {
    const std::string nu(s.substr(10));
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(nu, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != nu.size() || nu.empty() || !(v > 0) || !std::isfinite(v))
      bad_input("distribution '" + std::string(s) + "': degrees of freedom must be a number > 0");
    return {Distribution::Kind::student_t, v};
  }
  bad_input("unknown distribution '" + std::string(s) + "' (normal, student-t:NU)");
}

std::string distribution_name(const Distribution& d) {
  return d.kind == Distribution::Kind::normal ? "normal" : fmt::format("student-t:{:g}", d.dof);
}

namespace {

double uniform_open(Rng& rng) { return 1.0 - rng.uniform(0.0, 1.0); }  // (0, 1]

double normal(Rng& rng) {  // Box-Muller, one value per pair of uniforms
  return std::sqrt(-2.0 * std::log(uniform_open(rng))) * std::cos(2.0 * std::numbers::pi * rng.uniform(0.0, 1.0));
}

// Gamma(shape, 1) by Marsaglia and Tsang's squeeze method; shape < 1 through Gamma(shape + 1) * U^(1/shape).
double gamma(Rng& rng, double shape) {
  if (shape < 1.0) return gamma(rng, shape + 1.0) * std::pow(uniform_open(rng), 1.0 / shape);
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double z, v;
    do {
      z = normal(rng);
      v = 1.0 + c * z;
    } while (v <= 0);
    v = v * v * v;
    const double u = uniform_open(rng);
    if (std::log(u) < 0.5 * z * z + d - d * v + d * std::log(v)) return d * v;
  }
}

}  // namespace

Matrix generate(int64_t rows, int64_t cols, const Distribution& d, uint64_t seed) {
  Matrix m(rows, cols);
  Rng rng(seed);
  for (double& x : m.v) {
    do {
      x = normal(rng);
      if (d.kind == Distribution::Kind::student_t) x /= std::sqrt(2.0 * gamma(rng, d.dof / 2.0) / d.dof);  // chi2(nu) = 2 Gamma(nu/2)
    } while (x == 0.0 || !std::isfinite(x));
  }
  return m;
}

std::vector<QuantSpec> default_specs() {
  using K = Granularity::Kind;
  std::vector<QuantSpec> s;
  s.push_back({Format::int8, {K::channel}});
  for (int64_t g : {32, 64, 128})
    for (ZeroPoint z : {ZeroPoint::none, ZeroPoint::integer, ZeroPoint::float_min})
      for (Method m : {Method::rtn, Method::clip}) s.push_back({Format::int4, {K::group, 1, g}, z, m});
  s.push_back({Format::fp8_e4m3, {K::channel}});
  s.push_back({Format::fp8_e4m3, {K::block, 128, 128}});
  s.push_back({Format::fp8_e5m2, {K::channel}});
  for (Format f : {Format::mxfp8, Format::mxfp4, Format::nvfp4})
    for (Method m : {Method::rtn, Method::clip}) s.push_back({f, default_granularity(f), ZeroPoint::none, m});
  return s;
}

Evaluator::Evaluator(Matrix w, const Activations& a) : w_(std::move(w)), a_(a) {
  if (a.rows < 1) bad_input("activation rows must be at least 1");
  for (size_t i = 0; i < w_.v.size(); ++i)
    if (!std::isfinite(w_.v[i]))
      bad_input(fmt::format("weight element ({}, {}) is {}: quant eval needs finite weights", i / static_cast<size_t>(w_.cols),
                            i % static_cast<size_t>(w_.cols), w_.v[i]));
  if (a.outliers < 0 || a.outliers > w_.cols) bad_input(fmt::format("outlier channels must be in [0, {}]", w_.cols));
  if (a.given) {
    if (a.given->cols != w_.cols) bad_input(fmt::format("activations have {} columns, the weight {}", a.given->cols, w_.cols));
    for (double v : a.given->v)
      if (!std::isfinite(v)) bad_input("activations hold a non-finite value");
    x_ = *a.given;
    x_out_ = x_;
  } else {
    x_ = generate(a.rows, w_.cols, {Distribution::Kind::normal, 0}, a.seed);
    // Outlier channels: distinct, drawn from the activation seed's stream.
    Rng rng(a.seed ^ 0x5EEDull);
    while (static_cast<int>(outliers_.size()) < a.outliers) {
      const int64_t j = static_cast<int64_t>(rng.next() % static_cast<uint64_t>(w_.cols));
      if (std::find(outliers_.begin(), outliers_.end(), j) == outliers_.end()) outliers_.push_back(j);
    }
    std::sort(outliers_.begin(), outliers_.end());
    x_out_ = x_;
    for (int64_t j : outliers_)
      for (int64_t r = 0; r < x_out_.rows; ++r) x_out_.at(r, j) *= a.outlier_scale;
  }
  c_ref_ = matmul_nt(x_, w_);
  c_out_ref_ = matmul_nt(x_out_, w_);
}

namespace {

void weight_metrics(EvalRow& row, const Matrix& w, const Matrix& wq) {
  row.cosine = cosine(w.v, wq.v);
  row.snr_db = snr_db(w.v, wq.v);
  row.max_abs_err = max_abs_err(w.v, wq.v);
  row.mse = mse(w.v, wq.v);
}

}  // namespace

EvalRow Evaluator::weight_only(const QuantSpec& spec) const {
  EvalRow row;
  row.spec = spec;
  const Matrix wq = dequantize(quantize(w_, spec));
  const Matrix c = matmul_nt(x_, wq);
  row.calc_diff = calc_diff(c_ref_.v, c.v);
  row.rel_err = rel_err(c_ref_.v, c.v);
  weight_metrics(row, w_, wq);
  return row;
}

std::vector<EvalRow> Evaluator::w8a8_pair() const {
  const QuantSpec per_row{Format::int8, {Granularity::Kind::channel}};  // per token for X, per channel for W
  std::vector<EvalRow> rows;
  for (bool smooth : {false, true}) {
    Matrix x = x_out_, w = w_;
    std::vector<double> s(static_cast<size_t>(w_.cols), 1.0);
    if (smooth) {
      s = smooth_scales(x, w, a_.alpha);
      smooth_apply(x, w, s);
    }
    const Matrix xq = dequantize(quantize(x, per_row));
    Matrix wq = dequantize(quantize(w, per_row));
    const Matrix c = matmul_nt(xq, wq);
    for (int64_t r = 0; r < wq.rows; ++r)
      for (int64_t j = 0; j < wq.cols; ++j) wq.at(r, j) /= s[static_cast<size_t>(j)];  // the effective weight
    EvalRow row;
    row.spec = per_row;
    row.activations = "int8/token";
    row.smoothquant = smooth;
    row.calc_diff = calc_diff(c_out_ref_.v, c.v);
    row.rel_err = rel_err(c_out_ref_.v, c.v);
    weight_metrics(row, w_, wq);
    rows.push_back(row);
  }
  return rows;
}

nlohmann::json to_json(const EvalRow& r) {
  auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };  // snr of an exact result: null
  return {{"format", format_name(r.spec.format)},
          {"granularity", granularity_name(r.spec.granularity)},
          {"symmetric", r.spec.symmetric()},
          {"zero_point", zero_point_name(r.spec.zero)},
          {"method", method_name(r.spec.method)},
          {"activations", r.activations},
          {"smoothquant", r.smoothquant},
          {"calc_diff", num(r.calc_diff)},
          {"rel_err", num(r.rel_err)},
          {"cosine", num(r.cosine)},
          {"snr_db", num(r.snr_db)},
          {"max_abs_err", num(r.max_abs_err)},
          {"mse", num(r.mse)}};
}

}  // namespace kl::quant
