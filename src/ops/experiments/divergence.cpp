// exp_divergence: the cost of branch divergence inside a warp. Element e follows path e % paths,
// a chain of `work` dependent FMAs with that path's coefficients. The divergent rung gives a
// warp 32 consecutive elements (up to 32 paths per warp, run one after another); the uniform
// rung regroups the same elements so a warp's lanes share a path. Same output, same FLOPs.
#include <fmt/format.h>

#include <cmath>

#include "kernelab/error.h"
#include "ops/experiments/experiments.h"
#include "ops/ops.h"

namespace kl {

Op make_exp_divergence_op() {
  Op op;
  op.experiment = true;
  op.name = "exp_divergence";
  op.summary = "experiment: y[e] = `work` FMAs y = y*a[p] + b[p] from x[e], path p = e % paths; divergent vs uniform warps";
  op.counting =
      "2*work FLOPs per element (the FMAs of its own path only); bytes: x read, y written (8 per element), the "
      "coefficients once. A warp holding k distinct paths runs them one after another: about k times the time of a "
      "uniform warp, the FLOPs it does not use masked off";
  op.dims = {{"n", int64_t{1} << 20, "elements (one thread each)"}, {"paths", 1, "distinct paths (1 to 32)"},
             {"work", 256, "dependent FMAs on each path"}};
  op.dtypes = {DType::f32};
  op.parse = [](const Problem& p) -> std::any {
    return ExpDivergenceParams{p.dim("n"), p.dim("paths"), p.dim("work"), p.dtype_of("x"), p.dtype_of("a"), p.dtype_of("b"), p.dtype_of("y")};
  };
  op.validate = [](const Problem& p) {
    if (p.dim("paths") > 32) bad_input(fmt::format("exp_divergence: paths={} is over 32 (lanes of a warp)", p.dim("paths")));
    if (p.dim("work") > (int64_t{1} << 20)) bad_input(fmt::format("exp_divergence: work={} is over 2^20", p.dim("work")));
    if (p.dim("n") >= (int64_t{1} << 31)) bad_input(fmt::format("exp_divergence: n={} is 2^31 or more", p.dim("n")));
  };
  op.cost = [](const Problem& p) {
    const double n = static_cast<double>(p.dim("n"));
    return Cost{2 * n * static_cast<double>(p.dim("work")), 8 * n + 2 * 32 * 4};
  };
  // Coefficients in [0.25, 0.75): every chain contracts towards b/(1-a), so fp32 rounding does not grow with work.
  op.inputs = [](const Problem& p) {
    return std::vector<TensorSpec>{{"x", DType::f32, {p.dim("n")}, {}}, {"a", DType::f32, {32}, {}, 0.25, 0.75},
                                   {"b", DType::f32, {32}, {}, 0.25, 0.75}};
  };
  op.outputs = [](const Problem& p) { return std::vector<TensorSpec>{{"y", DType::f32, {p.dim("n")}, {}}}; };
  op.reference = [](const Problem& p, std::span<const Tensor> in) {
    const int64_t n = p.dim("n"), paths = p.dim("paths"), work = p.dim("work");
    const std::vector<double> x = to_doubles(in[0]), a = to_doubles(in[1]), b = to_doubles(in[2]);
    std::vector<double> y(x.size());
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < n; ++e) {
      double v = x[e];
      for (int64_t k = 0; k < work; ++k) v = v * a[e % paths] + b[e % paths];
      y[e] = v;
    }
    return reference_outputs(std::move(y));
  };
  op.check_cases = [](const Op& self) {
    std::vector<Problem> out;
    for (int64_t paths : {1, 2, 3, 32})
      for (int64_t n : {1, 33, 1000, 4096}) out.push_back(make_problem(self, DType::f32, {{"n", n}, {"paths", paths}, {"work", n == 1 ? 1 : 17}}));
    return out;
  };
  op.profile_cases = [](const Op& self) {  // active lanes per memory instruction fall with the paths
    std::vector<Problem> out;
    for (int64_t paths : {1, 4, 32}) out.push_back(make_problem(self, DType::f32, {{"n", 65536}, {"paths", paths}, {"work", 16}}));
    return out;
  };
  op.report_cases = [](const Op& self) {
    std::vector<Problem> out;
    for (int64_t paths : {1, 2, 32}) out.push_back(make_problem(self, DType::f32, {{"paths", paths}}));
    return out;
  };
  op.tolerance = [](const Problem&) { return default_tolerance(DType::f32); };
  op.error_per_row = false;
  return op;
}

}  // namespace kl
