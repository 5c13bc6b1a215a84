// reduce: sum or max of each row (over=rows, output (rows)) or of every element (over=total,
// output (1)); the result is fp32 whatever the input dtype.
#include <cmath>

#include "ops/reduce/reduce.h"
#include "ops/ops.h"
#include "ops/rowwise.h"

namespace kl {

namespace {
std::vector<std::vector<double>> reference(const Problem& p, std::span<const Tensor> in) {
  const int64_t rows = p.dim("rows"), cols = p.dim("cols");
  const bool is_max = p.opt("mode") == "max";
  const bool total = p.opt("over") == "total";
  const std::vector<double> x = to_doubles(in[0]);
  std::vector<double> out(total ? 1 : static_cast<size_t>(rows), is_max ? -INFINITY : 0.0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      double& o = out[total ? 0 : static_cast<size_t>(i)];
      o = is_max ? std::max(o, x[i * cols + j]) : o + x[i * cols + j];
    }
  return reference_outputs(std::move(out));
}
}  // namespace

Op make_reduce_op() {
  Op op;
  op.name = "reduce";
  op.summary = "sum or max over each row or over all elements; fp32 result";
  op.counting = "1 FLOP per element; bytes: x read once, the result written once";
  op.dims = rows_cols_dims();
  op.opts = {{"mode", {"sum", "max"}, "sum", "the reduction"},
             {"over", {"rows", "total"}, "rows", "one result per row, or one in total"}};
  op.dtypes = float_dtypes();
  op.parse = [](const Problem& p) -> std::any {
    // y is fp32 whatever the problem's dtype (op.outputs), so its dtype is not p.dtype_of("y").
    return ReduceParams{.rows = p.dim("rows"),
                        .cols = p.dim("cols"),
                        .is_max = p.opt("mode") == "max",
                        .total = p.opt("over") == "total",
                        .x = p.dtype_of("x"),
                        .y = DType::f32};
  };
  op.cost = [](const Problem& p) {
    const double rows = static_cast<double>(p.dim("rows")), n = rows * static_cast<double>(p.dim("cols"));
    return Cost{n, n * dtype_bits(p.dtype) / 8.0 + 4 * (p.opt("over") == "total" ? 1 : rows)};
  };
  // Inputs in [0, 1): a sum of them is well conditioned, so its error measures the summation.
  op.inputs = [](const Problem& p) {
    return std::vector<TensorSpec>{{"x", p.dtype, {p.dim("rows"), p.dim("cols")}, {}, 0.0, 1.0}};
  };
  op.outputs = [](const Problem& p) {
    return std::vector<TensorSpec>{{"y", DType::f32, {p.opt("over") == "total" ? 1 : p.dim("rows")}, {}}};
  };
  op.reference = reference;
  op.check_cases = [](const Op& self) {
    return rows_cols_cases(self, {{}, {{"mode", "max"}}, {{"over", "total"}}, {{"mode", "max"}, {"over", "total"}}});
  };
  op.profile_cases = [](const Op& self) {
    return std::vector<Problem>{make_problem(self, DType::f32, {{"rows", 1024}, {"cols", 1024}})};
  };
  op.report_cases = [](const Op& self) {
    return std::vector<Problem>{make_problem(self, DType::f32, {{"rows", 4096}, {"cols", 4096}}),
                                make_problem(self, DType::f32, {{"rows", 4096}, {"cols", 4096}}, {{"over", "total"}})};
  };
  // fp32 recursive summation of n terms in [0, 1) has a typical relative error ~ sqrt(n) * 2^-24;
  // allow four times that (max is exact).
  op.tolerance = [](const Problem& p) {
    if (p.opt("mode") == "max") return 0.0;
    const double n = static_cast<double>(p.dim("cols")) * (p.opt("over") == "total" ? static_cast<double>(p.dim("rows")) : 1.0);
    return std::max(default_tolerance(DType::f32), 4 * std::sqrt(n) * 0x1p-24);
  };
  op.variants = KL_CPU_ISA_VARIANTS(reduce_cpu_variants);
  return op;
}

}  // namespace kl
