#include <cmath>

#include "ops/bias_gelu/bias_gelu.h"
#include "ops/ops.h"
#include "ops/rowwise.h"

namespace kl {

Op make_bias_gelu_op() {
  Op op;
  op.name = "bias_gelu";
  op.summary = "y = gelu(x + bias), gelu(t) = t/2 * (1 + erf(t/sqrt 2)), bias broadcast along rows";
  op.counting = "6 FLOPs per element (bias add, scale, erf counted as one, add, two multiplies); bytes: x read "
                "once, bias once, y written once";
  op.dims = rows_cols_dims();
  op.dtypes = float_dtypes();
  op.parse = [](const Problem& p) -> std::any {
    return BiasGeluParams{p.dim("rows"), p.dim("cols"), p.dtype_of("x"), p.dtype_of("bias"), p.dtype_of("y")};
  };
  op.cost = [](const Problem& p) {
    const double n = static_cast<double>(p.dim("rows")) * static_cast<double>(p.dim("cols"));
    const double e = dtype_bits(p.dtype) / 8.0;
    return Cost{6 * n, (2 * n + static_cast<double>(p.dim("cols"))) * e};
  };
  op.inputs = [](const Problem& p) {
    return std::vector<TensorSpec>{{"x", p.dtype, {p.dim("rows"), p.dim("cols")}, {}, -3.0, 3.0},
                                   {"bias", p.dtype, {p.dim("cols")}, {}}};
  };
  op.outputs = [](const Problem& p) { return std::vector<TensorSpec>{{"y", p.dtype, {p.dim("rows"), p.dim("cols")}, {}}}; };
  op.reference = [](const Problem& p, std::span<const Tensor> in) {
    const int64_t rows = p.dim("rows"), cols = p.dim("cols");
    const std::vector<double> x = to_doubles(in[0]), b = to_doubles(in[1]);
    std::vector<double> y(x.size());
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        const double t = x[i * cols + j] + b[j];
        y[i * cols + j] = 0.5 * t * std::erfc(-t / std::sqrt(2.0));
      }
    return reference_outputs(std::move(y));
  };
  op.check_cases = [](const Op& self) { return rows_cols_cases(self, {{}}); };
  op.profile_cases = [](const Op& self) {
    return std::vector<Problem>{make_problem(self, DType::f32, {{"rows", 1024}, {"cols", 1024}})};
  };
  op.report_cases = [](const Op& self) {
    return std::vector<Problem>{make_problem(self, DType::f32, {{"rows", 4096}, {"cols", 4096}}),
                                make_problem(self, DType::bf16, {{"rows", 4096}, {"cols", 4096}})};
  };
  // The unfused rung rounds x + bias to the dtype before gelu: two roundings, so twice the usual
  // allowance for fp16/bf16.
  op.tolerance = [](const Problem& p) { return (p.dtype == DType::f32 ? 1 : 2) * default_tolerance(p.dtype); };
  op.error_per_row = false;  // elementwise: rows are not separate problems; gelu(t) ~ 0 for t << 0
  op.variants = KL_CPU_ISA_VARIANTS(bias_gelu_cpu_variants);
  return op;
}

}  // namespace kl
