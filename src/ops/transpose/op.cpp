// transpose: y (cols, rows) = x (rows, cols)^T. No arithmetic: the whole lesson is moving bytes.
#include "ops/transpose/transpose.h"
#include "ops/ops.h"
#include "ops/rowwise.h"

namespace kl {

Op make_transpose_op() {
  Op op;
  op.name = "transpose";
  op.summary = "y = x^T for a row-major (rows, cols) matrix";
  op.counting = "0 FLOPs; bytes: x read once, y written once";
  op.dims = rows_cols_dims();
  op.dtypes = float_dtypes();
  op.parse = [](const Problem& p) -> std::any {
    return TransposeParams{p.dim("rows"), p.dim("cols"), p.dtype_of("x"), p.dtype_of("y")};
  };
  op.cost = [](const Problem& p) {
    const double n = static_cast<double>(p.dim("rows")) * static_cast<double>(p.dim("cols"));
    return Cost{0, 2 * n * dtype_bits(p.dtype) / 8.0};
  };
  op.inputs = [](const Problem& p) { return std::vector<TensorSpec>{{"x", p.dtype, {p.dim("rows"), p.dim("cols")}, {}}}; };
  op.outputs = [](const Problem& p) { return std::vector<TensorSpec>{{"y", p.dtype, {p.dim("cols"), p.dim("rows")}, {}}}; };
  op.reference = [](const Problem& p, std::span<const Tensor> in) {
    const int64_t rows = p.dim("rows"), cols = p.dim("cols");
    const std::vector<double> x = to_doubles(in[0]);
    std::vector<double> y(x.size());
#pragma omp parallel for schedule(static)
    for (int64_t j = 0; j < cols; ++j)
      for (int64_t i = 0; i < rows; ++i) y[j * rows + i] = x[i * cols + j];
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
  op.tolerance = [](const Problem&) { return 0.0; };  // a copy: exact
  op.variants = KL_CPU_ISA_VARIANTS(transpose_cpu_variants);
  return op;
}

}  // namespace kl
