#include <cmath>

#include "ops/ops.h"
#include "ops/rowwise.h"
#include "ops/softmax/softmax.h"

namespace kl {

namespace {
std::vector<std::vector<double>> reference(const Problem& problem, std::span<const Tensor> in) {
  const SoftmaxParams& p = problem.as<SoftmaxParams>();
  const int64_t rows = p.rows, cols = p.cols;
  const double scale = p.scale;
  const std::vector<double> x = to_doubles(in[0]);
  std::vector<double> y(static_cast<size_t>(rows * cols), 0.0);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t valid = p.valid_cols(i);
    const double* xr = &x[i * cols];
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < valid; ++j) m = std::max(m, scale * xr[j]);
    for (int64_t j = 0; j < valid; ++j) s += std::exp(scale * xr[j] - m);
    for (int64_t j = 0; j < valid; ++j) y[i * cols + j] = std::exp(scale * xr[j] - m) / s;
  }
  return reference_outputs(std::move(y));
}
}  // namespace

Op make_softmax_op() {
  Op op;
  op.name = "softmax";
  op.summary = "row-wise softmax of scale*x, optional causal mask";
  op.counting = "5 FLOPs per element (scale, max, subtract, exp, divide); bytes: x read once, y written once";
  op.dims = rows_cols_dims();
  op.opts = {{"scale", {}, "1", "multiplies x before the softmax"},
             {"causal", {"0", "1"}, "0", "mask j > i + (cols - rows) (bottom-right aligned)"}};
  op.dtypes = float_dtypes();
  op.parse = [](const Problem& p) -> std::any {
    return SoftmaxParams{p.dim("rows"), p.dim("cols"), p.opt_number("scale"), p.opt_flag("causal"), p.dtype_of("x"), p.dtype_of("y")};
  };
  op.cost = [](const Problem& p) {
    const double n = static_cast<double>(p.dim("rows")) * static_cast<double>(p.dim("cols"));
    const double esize = dtype_bits(p.dtype) / 8.0;
    return Cost{5 * n, 2 * n * esize};
  };
  op.inputs = [](const Problem& p) {
    return std::vector<TensorSpec>{{"x", p.dtype, {p.dim("rows"), p.dim("cols")}, {}}};
  };
  op.outputs = [](const Problem& p) {
    return std::vector<TensorSpec>{{"y", p.dtype, {p.dim("rows"), p.dim("cols")}, {}}};
  };
  op.reference = reference;
  op.check_cases = [](const Op& self) {
    return rows_cols_cases(self, {{}, {{"causal", "1"}, {"scale", "0.125"}}});
  };
  op.profile_cases = [](const Op& self) {
    return std::vector<Problem>{make_problem(self, DType::f32, {{"rows", 1024}, {"cols", 1024}})};
  };
  op.report_cases = [](const Op& self) {
    return std::vector<Problem>{make_problem(self, DType::f32, {{"rows", 4096}, {"cols", 4096}}),
                                make_problem(self, DType::bf16, {{"rows", 4096}, {"cols", 4096}})};
  };
  op.tolerance = [](const Problem& p) { return default_tolerance(p.dtype); };
  op.variants = KL_CPU_ISA_VARIANTS(softmax_cpu_variants);
  return op;
}

}  // namespace kl
