// `kernelab quant eval`'s computation: generated weights, the GEMM against random activations,
// and one row of metrics per quantization (see src/cli/cmd_quant.cpp for the command).
//
// Metrics of a row: calc_diff and rel_err on the GEMM output C = X * W^T (M x N) against the
// unquantized product; cosine, snr_db, max_abs_err and mse on the weights themselves. Weight-only
// rows keep X unquantized. The W8A8 rows quantize X per token and W per channel to int8, with and
// without SmoothQuant, on activations with outlier channels; their weight metrics compare the
// effective weights (dequantized W * s, divided back by s) with W.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quant/matrix.h"
#include "quant/quantize.h"

namespace kl::quant {

struct Distribution {
  enum class Kind { normal, student_t };
  Kind kind = Kind::student_t;
  double dof = 3;  // Student-t degrees of freedom
};
Distribution parse_distribution(std::string_view s);  // "normal" or "student-t:NU" (NU > 0); BadInput
std::string distribution_name(const Distribution& d);

// rows x cols values of the distribution (standard normal, or Student-t = Z / sqrt(V / nu) with V
// chi-square(nu)), from kernelab's splitmix64 Rng seeded with `seed`: the same on every machine.
Matrix generate(int64_t rows, int64_t cols, const Distribution& d, uint64_t seed);

struct Activations {
  int64_t rows = 64;
  uint64_t seed = 2;
  int outliers = 4;            // W8A8 rows: this many channels (chosen by the seed) ...
  double outlier_scale = 50;   // ... scaled by this
  double alpha = 0.5;          // SmoothQuant migration strength
  std::optional<Matrix> given;  // real activations (M x K) instead of generated ones: no outliers added
};

struct EvalRow {
  QuantSpec spec;
  std::string activations = "fp64";  // "fp64", or "int8/token" for the W8A8 rows
  bool smoothquant = false;
  double calc_diff = 0, rel_err = 0, cosine = 0, snr_db = 0, max_abs_err = 0, mse = 0;
};

// The rows the command prints without --format: int8 per channel; int4 per group of 32/64/128,
// symmetric, GPTQ-zero and AWQ-zero, RTN and clip; fp8 e4m3 (channel, 128x128) and e5m2; MXFP8,
// MXFP4, NVFP4, each also with clip.
std::vector<QuantSpec> default_specs();

class Evaluator {
 public:
  Evaluator(Matrix w, const Activations& a);
  EvalRow weight_only(const QuantSpec& spec) const;
  std::vector<EvalRow> w8a8_pair() const;  // without, then with SmoothQuant
  const std::vector<int64_t>& outlier_channels() const { return outliers_; }

 private:
  Matrix w_, x_, c_ref_;                // weights, plain activations, X * W^T
  Matrix x_out_, c_out_ref_;            // activations with outlier channels, and their product
  std::vector<int64_t> outliers_;
  Activations a_;
};

nlohmann::json to_json(const EvalRow& r);  // keys format, granularity, symmetric, method, calc_diff, ...

}  // namespace kl::quant
