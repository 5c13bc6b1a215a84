// `kernelab quant eval`: the quantization error of formats, granularities and methods on one
// weight matrix, generated (Student-t or normal, seeded) or read from a .safetensors file. Without
// --format it prints the whole table (quant/eval.h default_specs, then the W8A8 pair); every
// number is computed here on this matrix. --json prints one object: the weight, the activations
// and the list of rows.
#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "cli/common.h"
#include "kernelab/error.h"
#include "quant/eval.h"
#include "quant/safetensors.h"

namespace kl::cli {

namespace {

struct QuantFlags {
  std::string safetensors, tensor, activations;
  int64_t rows = 1024, cols = 1024;
  std::string dist = "student-t:3";
  uint64_t seed = 1;
  std::string format, granularity, zero_point, method;
  bool symmetric = false, asymmetric = false;
  int64_t act_rows = 64;
  std::optional<uint64_t> act_seed;
  int outliers = 4;
  double outlier_scale = 50, alpha = 0.5;
  bool json = false;
};

constexpr int64_t kMaxElements = int64_t(1) << 26;  // 512 MiB of doubles per matrix

std::string formats_list() {
  std::string s;
  for (quant::Format f : quant::all_formats()) s += std::string(quant::format_name(f)) + ", ";
  return s + "w8a8";
}

quant::QuantSpec spec_from_flags(const QuantFlags& f) {
  const std::optional<quant::Format> fmt_ = quant::parse_format(f.format);
  if (!fmt_) bad_input("unknown --format '" + f.format + "' (" + formats_list() + ")");
  quant::QuantSpec s;
  s.format = *fmt_;
  s.granularity = f.granularity.empty() ? quant::default_granularity(s.format) : quant::parse_granularity(f.granularity);
  if (f.asymmetric) {
    if (f.zero_point.empty() || f.zero_point == "gptq") s.zero = quant::ZeroPoint::integer;
    else if (f.zero_point == "awq") s.zero = quant::ZeroPoint::float_min;
    else bad_input("unknown --zero-point '" + f.zero_point + "' (gptq, awq)");
  } else if (!f.zero_point.empty()) {
    bad_input("--zero-point needs --asymmetric");
  }
  if (f.method.empty() || f.method == "rtn") s.method = quant::Method::rtn;
  else if (f.method == "clip") s.method = quant::Method::clip;
  else bad_input("unknown --method '" + f.method + "' (rtn, clip)");
  quant::validate(s);
  return s;
}

std::string num(double v, const char* spec) { return std::isfinite(v) ? fmt::format(fmt::runtime(spec), v) : "inf"; }

void run_eval(const QuantFlags& f) {
  const bool w8a8_only = f.format == "w8a8";
  if (f.format.empty() || w8a8_only) {
    if (!f.granularity.empty() || f.symmetric || f.asymmetric || !f.zero_point.empty() || !f.method.empty())
      bad_input(f.format.empty() ? "--granularity, --symmetric/--asymmetric, --zero-point and --method need --format"
                                 : "--format w8a8 is int8 per token x int8 per channel, RTN: it takes no granularity, zero point or method");
  }
  // The flags are checked before any weight is read or generated.
  std::vector<quant::QuantSpec> specs;
  if (f.format.empty()) specs = quant::default_specs();
  else if (!w8a8_only) specs = {spec_from_flags(f)};

  quant::Matrix w;
  std::string source;
  if (!f.safetensors.empty()) {
    if (f.tensor.empty()) bad_input("--safetensors needs --tensor NAME");
    w = quant::read_safetensors_matrix(f.safetensors, f.tensor);
    source = fmt::format("{} tensor {}", f.safetensors, f.tensor);
  } else {
    if (!f.tensor.empty()) bad_input("--tensor needs --safetensors FILE");
    if (f.rows > kMaxElements || f.cols > kMaxElements || f.rows * f.cols > kMaxElements)
      bad_input(fmt::format("--rows {} x --cols {}: at most 2^26 elements", f.rows, f.cols));
    const quant::Distribution d = quant::parse_distribution(f.dist);
    w = quant::generate(f.rows, f.cols, d, f.seed);
    source = fmt::format("{}, seed {}", quant::distribution_name(d), f.seed);
  }
  if (f.act_rows > kMaxElements || f.act_rows * w.cols > kMaxElements)
    bad_input(fmt::format("--act-rows {} x {} columns: at most 2^26 elements", f.act_rows, w.cols));
  quant::Activations a;
  if (!f.activations.empty()) {
    if (f.safetensors.empty()) bad_input("--activations needs --safetensors FILE");
    a.given = quant::read_safetensors_matrix(f.safetensors, f.activations);
  }
  a.rows = a.given ? a.given->rows : f.act_rows;
  a.seed = f.act_seed.value_or(f.seed + 1);
  a.outliers = f.outliers;
  a.outlier_scale = f.outlier_scale;
  a.alpha = f.alpha;
  const quant::Evaluator ev(w, a);

  std::vector<quant::EvalRow> rows;
  for (const quant::QuantSpec& s : specs) rows.push_back(ev.weight_only(s));
  if (f.format.empty() || w8a8_only)
    for (const quant::EvalRow& r : ev.w8a8_pair()) rows.push_back(r);

  if (f.json) {
    nlohmann::json out = {{"weight", {{"rows", w.rows}, {"cols", w.cols}, {"source", source}}},
                          {"activations", {{"rows", a.rows}, {"source", a.given ? f.activations : fmt::format("normal, seed {}", a.seed)}}},
                          {"rows", nlohmann::json::array()}};
    if (!a.given) out["activations"]["seed"] = a.seed;
    for (const quant::EvalRow& r : rows) out["rows"].push_back(quant::to_json(r));
    fmt::print("{}\n", out.dump(2));
    return;
  }
  std::string outliers;
  for (int64_t j : ev.outlier_channels()) outliers += (outliers.empty() ? "" : ",") + std::to_string(j);
  fmt::print("quant eval: W {}x{} ({}); X {}x{} {}; calc_diff and rel_err on C = X*W^T, the rest on W\n", w.rows, w.cols, source,
             a.rows, w.cols, a.given ? "tensor " + f.activations : fmt::format("normal, seed {}", a.seed));
  if (a.given)
    fmt::print("X is tensor {} of {} as it is (no outliers added); W8A8 rows: int8 per token; W int8 per channel; SmoothQuant alpha {:g}\n",
               f.activations, f.safetensors, a.alpha);
  else
    fmt::print("W8A8 rows: X with channels [{}] scaled {:g}x, int8 per token; W int8 per channel; SmoothQuant alpha {:g}\n", outliers,
               a.outlier_scale, a.alpha);
  std::vector<std::vector<std::string>> table;
  for (const quant::EvalRow& r : rows)
    table.push_back({std::string(quant::format_name(r.spec.format)), quant::granularity_name(r.spec.granularity),
                     r.spec.symmetric() ? "sym" : "asym", std::string(quant::zero_point_name(r.spec.zero)),
                     std::string(quant::method_name(r.spec.method)),
                     r.activations + (r.smoothquant ? " +smoothquant" : ""), num(r.calc_diff, "{:.3e}"), num(r.rel_err, "{:.3e}"),
                     num(r.cosine, "{:.6f}"), num(r.snr_db, "{:.2f}"), num(r.max_abs_err, "{:.3e}")});
  print_table({"format", "granularity", "sym", "zero", "method", "activations", "calc_diff", "rel_err", "cosine", "snr_db", "max_abs_err"},
              table);
}

}  // namespace

void add_quant(CLI::App& app) {
  auto* quant = app.add_subcommand("quant", "quantization formats and their error");
  quant->require_subcommand(1);
  auto* sub = quant->add_subcommand("eval", "quantization error of formats, granularities and methods on a weight matrix "
                                            "(generated or from a .safetensors file): GEMM calc_diff/rel_err, weight cosine/SNR/max error");
  static QuantFlags f;
  auto* st = sub->add_option("--safetensors", f.safetensors, "read the weight from this .safetensors file (F32/F16/BF16, 2-D)");
  sub->add_option("--tensor", f.tensor, "the tensor's name in --safetensors");
  auto* rows = sub->add_option("--rows", f.rows, "generated weight: rows N (output channels)")->check(CLI::Range(int64_t(1), kMaxElements));
  auto* cols = sub->add_option("--cols", f.cols, "generated weight: columns K (the reduction)")->check(CLI::Range(int64_t(1), kMaxElements));
  auto* dist = sub->add_option("--dist", f.dist, "generated weight: normal or student-t:NU");
  auto* seed = sub->add_option("--seed", f.seed, "generated weight: seed (activations use seed + 1 unless --act-seed)");
  st->excludes(rows)->excludes(cols)->excludes(dist)->excludes(seed);
  sub->add_option("--format", f.format, "one format: " + formats_list() + " (default: the whole table)");
  sub->add_option("--granularity", f.granularity, "tensor, channel, group:G or block:RxC (default: the format's own)");
  auto* sym = sub->add_flag("--symmetric", f.symmetric, "symmetric (the default)");
  auto* asym = sub->add_flag("--asymmetric", f.asymmetric, "with a zero point (int8/int4)");
  sym->excludes(asym);
  sub->add_option("--zero-point", f.zero_point, "with --asymmetric: gptq (integer q_z, the default) or awq (fp32 zero)");
  sub->add_option("--method", f.method, "rtn (default) or clip (per-tile clip-ratio search)");
  auto* act_rows = sub->add_option("--act-rows", f.act_rows, "activation rows M of the GEMM check")->check(CLI::Range(int64_t(1), kMaxElements));
  auto* act_seed = sub->add_option("--act-seed", f.act_seed, "activation seed");
  auto* outliers = sub->add_option("--outliers", f.outliers, "W8A8 rows: number of outlier activation channels")->check(CLI::Range(0, 1 << 20));
  auto* outlier_scale = sub->add_option("--outlier-scale", f.outlier_scale, "W8A8 rows: factor of the outlier channels")->check(CLI::Range(1e-6, 1e6));
  sub->add_option("--activations", f.activations, "with --safetensors: an M x K activation tensor in the same file, used as it is")
      ->excludes(act_rows)->excludes(act_seed)->excludes(outliers)->excludes(outlier_scale);
  sub->add_option("--alpha", f.alpha, "SmoothQuant migration strength")->check(CLI::Range(0.0, 1.0));
  sub->add_flag("--json", f.json, "print one JSON object: weight, activations and the list of rows");
  sub->callback([] { run_eval(f); });
}

}  // namespace kl::cli
