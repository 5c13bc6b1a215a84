#include <cmath>

#include "ops/norm/norm.h"
#include "ops/ops.h"
#include "ops/rowwise.h"

namespace kl {

namespace {
std::vector<std::vector<double>> reference(NormKind kind, const Problem& p, std::span<const Tensor> in) {
  const int64_t rows = p.dim("rows"), cols = p.dim("cols");
  const double eps = p.opt_number("eps");
  const bool residual = p.opt_flag("residual");
  const std::vector<double> x = to_doubles(in[0]), gamma = to_doubles(in[1]);
  const std::vector<double> beta = kind == NormKind::layer ? to_doubles(in[2]) : std::vector<double>{};
  const std::vector<double> res = residual ? to_doubles(in.back()) : std::vector<double>{};
  std::vector<double> y(x.size()), h(residual ? x.size() : 0);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < rows; ++i) {
    std::vector<double> v(x.begin() + i * cols, x.begin() + (i + 1) * cols);
    if (residual)
      for (int64_t j = 0; j < cols; ++j) h[i * cols + j] = v[j] += res[i * cols + j];
    double mean = 0, sq = 0;
    if (kind == NormKind::layer) {
      for (double e : v) mean += e;
      mean /= static_cast<double>(cols);
    }
    for (double e : v) sq += (e - mean) * (e - mean);
    const double rstd = 1.0 / std::sqrt(sq / static_cast<double>(cols) + eps);
    for (int64_t j = 0; j < cols; ++j)
      y[i * cols + j] = (v[j] - mean) * rstd * gamma[j] + (kind == NormKind::layer ? beta[j] : 0.0);
  }
  if (residual) return reference_outputs(std::move(y), std::move(h));
  return reference_outputs(std::move(y));
}

Op make_norm_op(NormKind kind) {
  const bool layer = kind == NormKind::layer;
  Op op;
  op.name = layer ? "layernorm" : "rmsnorm";
  op.summary = layer ? "y = (h - mean) / sqrt(var + eps) * gamma + beta per row, h = x (+ residual)"
                     : "y = h / sqrt(mean(h^2) + eps) * gamma per row, h = x (+ residual)";
  op.counting = layer ? "8 FLOPs per element (mean, centre, square, sum, scale by rstd, gamma, beta) + 1 for the residual "
                        "add; bytes: x (and residual) read once, gamma and beta once, y (and h) written once"
                      : "4 FLOPs per element (square, sum, scale by rstd, gamma) + 1 for the residual add; bytes: x "
                        "(and residual) read once, gamma once, y (and h) written once";
  op.dims = rows_cols_dims();
  op.opts = {{"eps", {}, "1e-5", "added to the variance"},
             {"residual", {"0", "1"}, "0", "add a residual tensor first and write the sum h as a second output"}};
  op.dtypes = float_dtypes();
  op.parse = [layer](const Problem& p) -> std::any {
    return NormParams{.layer = layer,
                      .rows = p.dim("rows"),
                      .cols = p.dim("cols"),
                      .eps = p.opt_number("eps"),
                      .residual = p.opt_flag("residual"),
                      .x = p.dtype_of("x"),
                      .gamma = p.dtype_of("gamma"),
                      .beta = p.dtype_of("beta"),
                      .res = p.dtype_of("residual"),
                      .y = p.dtype_of("y"),
                      .h = p.dtype_of("h")};
  };
  op.cost = [layer](const Problem& p) {
    const double n = static_cast<double>(p.dim("rows")) * static_cast<double>(p.dim("cols"));
    const double c = static_cast<double>(p.dim("cols")), e = dtype_bits(p.dtype) / 8.0;
    const bool res = p.opt_flag("residual");
    const double flops = (layer ? 8 : 4) * n + (res ? n : 0);
    const double bytes = (2 * n + (layer ? 2 : 1) * c + (res ? 2 * n : 0)) * e;
    return Cost{flops, bytes};
  };
  op.inputs = [layer](const Problem& p) {
    const int64_t r = p.dim("rows"), c = p.dim("cols");
    std::vector<TensorSpec> in = {{"x", p.dtype, {r, c}, {}}, {"gamma", p.dtype, {c}, {}, 0.5, 1.5}};
    if (layer) in.push_back({"beta", p.dtype, {c}, {}});
    if (p.opt_flag("residual")) in.push_back({"residual", p.dtype, {r, c}, {}});
    return in;
  };
  op.outputs = [](const Problem& p) {
    const int64_t r = p.dim("rows"), c = p.dim("cols");
    std::vector<TensorSpec> out = {{"y", p.dtype, {r, c}, {}}};
    if (p.opt_flag("residual")) out.push_back({"h", p.dtype, {r, c}, {}});
    return out;
  };
  op.reference = [kind](const Problem& p, std::span<const Tensor> in) { return reference(kind, p, in); };
  op.check_cases = [](const Op& self) { return rows_cols_cases(self, {{}, {{"residual", "1"}, {"eps", "1e-6"}}}); };
  op.profile_cases = [](const Op& self) {
    return std::vector<Problem>{make_problem(self, DType::f32, {{"rows", 1024}, {"cols", 1024}})};
  };
  op.report_cases = [](const Op& self) {
    return std::vector<Problem>{make_problem(self, DType::f32, {{"rows", 4096}, {"cols", 4096}}),
                                make_problem(self, DType::bf16, {{"rows", 4096}, {"cols", 4096}}, {{"residual", "1"}})};
  };
  op.tolerance = [](const Problem& p) { return default_tolerance(p.dtype); };
  op.variants = KL_CPU_ISA_VARIANTS(norm_cpu_variants, kind);
  return op;
}
}  // namespace

Op make_layernorm_op() { return make_norm_op(NormKind::layer); }
Op make_rmsnorm_op() { return make_norm_op(NormKind::rms); }

}  // namespace kl
