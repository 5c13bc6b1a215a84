// exp_launch: the fixed cost of a kernel launch. `kernels` tiny kernels each add 1/64 to y (the
// first one to x): launched one by one on a stream, replayed as one CUDA Graph, or done on the
// CPU, which for small n finishes before a single launch would.
#include <fmt/format.h>

#include <algorithm>

#include "kernelab/error.h"
#include "ops/cpu_variant.h"
#include "ops/experiments/experiments.h"
#include "ops/ops.h"

namespace kl {

namespace {
constexpr float kStep = 1.0f / 64;

void launch_cpu(const ExpLaunchParams& p, const Args& a) {
  const int64_t n = p.n, kernels = p.kernels;
  const auto* x = static_cast<const float*>(a.in[0].data());
  auto* y = static_cast<float*>(a.out[0].data());
  // The same passes the GPU rungs make; threads only where a pass is long enough to pay for them.
  for (int64_t k = 0; k < kernels; ++k) {
    const float* src = k == 0 ? x : y;
#pragma omp parallel for schedule(static) if (n >= (1 << 16))
    for (int64_t i = 0; i < n; ++i) y[i] = src[i] + kStep;
  }
}
}  // namespace

Op make_exp_launch_op() {
  Op op;
  op.experiment = true;
  op.name = "exp_launch";
  op.summary = "experiment: y = x + kernels/64 as `kernels` passes that each add 1/64 (one kernel each on the GPU)";
  op.counting =
      "n FLOPs per pass; bytes: each pass reads and writes y, 8n per pass (what separate kernels must move). "
      "Below a few microseconds of work per kernel, time per pass is the launch cost: about the CPU's launch "
      "call on a stream, the GPU's own dispatch in a graph replay; the CPU rung pays no launch at all";
  op.dims = {{"n", 1024, "elements"}, {"kernels", 100, "passes (kernel launches)"}};
  op.dtypes = {DType::f32};
  op.parse = [](const Problem& p) -> std::any { return ExpLaunchParams{p.dim("n"), p.dim("kernels"), p.dtype_of("x"), p.dtype_of("y")}; };
  op.validate = [](const Problem& p) {
    if (p.dim("kernels") > 100000) bad_input(fmt::format("exp_launch: kernels={} is over 100000", p.dim("kernels")));
    if (p.dim("n") >= (int64_t{1} << 31)) bad_input(fmt::format("exp_launch: n={} is 2^31 or more", p.dim("n")));
  };
  op.cost = [](const Problem& p) {
    const double work = static_cast<double>(p.dim("n")) * static_cast<double>(p.dim("kernels"));
    return Cost{work, 8 * work};
  };
  op.inputs = [](const Problem& p) { return std::vector<TensorSpec>{{"x", DType::f32, {p.dim("n")}, {}}}; };
  op.outputs = [](const Problem& p) { return std::vector<TensorSpec>{{"y", DType::f32, {p.dim("n")}, {}}}; };
  op.reference = [](const Problem& p, std::span<const Tensor> in) {
    std::vector<double> y = to_doubles(in[0]);
    const double add = static_cast<double>(p.dim("kernels")) / 64;
    for (double& v : y) v += add;
    return reference_outputs(std::move(y));
  };
  op.check_cases = [](const Op& self) {
    std::vector<Problem> out;
    for (auto [n, k] : std::initializer_list<std::pair<int64_t, int64_t>>{{1, 1}, {7, 3}, {1000, 1}, {1000, 17}, {4099, 5}})
      out.push_back(make_problem(self, DType::f32, {{"n", n}, {"kernels", k}}));
    return out;
  };
  op.profile_cases = [](const Op& self) {
    return std::vector<Problem>{make_problem(self, DType::f32, {{"n", 1024}, {"kernels", 10}})};
  };
  op.report_cases = [](const Op& self) {
    std::vector<Problem> out;
    for (int64_t n : {1024, 1 << 20}) out.push_back(make_problem(self, DType::f32, {{"n", n}, {"kernels", 100}}));
    return out;
  };
  // Each pass rounds once in fp32: up to `kernels` half-ulps of values below 2 + kernels/64.
  op.tolerance = [](const Problem& p) { return std::max(default_tolerance(DType::f32), 1.2e-7 * static_cast<double>(p.dim("kernels"))); };
  op.error_per_row = false;
  op.variants = {cpu_variant("exp_launch", "cpu",
                             "the passes on the host, no launch: one thread below 65536 elements, where threads would cost more than the pass",
                             launch_cpu)};
  return op;
}

}  // namespace kl
