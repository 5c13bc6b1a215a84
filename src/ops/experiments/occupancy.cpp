// exp_occupancy: copy bandwidth against threads per block and resident blocks per SM, i.e.
// against the warps each SM keeps in flight to hide memory latency.
#include <fmt/format.h>

#include "kernelab/error.h"
#include "ops/experiments/experiments.h"
#include "ops/ops.h"

namespace kl {

Op make_exp_occupancy_op() {
  Op op;
  op.experiment = true;
  op.name = "exp_occupancy";
  op.summary = "experiment: grid-stride float4 copy of n floats by blocks_per_sm blocks of `threads` threads on every SM";
  op.counting =
      "0 FLOPs; bytes: x read once, y written once (8n). Little's law: to sustain bandwidth B with latency L an SM "
      "needs B*L/SMs bytes in flight; a warp has 512 bytes of float4 loads in flight, so bandwidth grows with "
      "resident warps per SM = blocks_per_sm * threads / 32 (capped by the SM's limits) until it saturates";
  op.dims = {{"n", int64_t{1} << 25, "floats copied"},
             {"threads", 256, "threads per block (a multiple of 32, at most 1024)"},
             {"blocks_per_sm", 8, "blocks launched per SM (the grid is this times the SM count)"}};
  op.dtypes = {DType::f32};
  op.parse = [](const Problem& p) -> std::any {
    return ExpOccupancyParams{p.dim("n"), p.dim("threads"), p.dim("blocks_per_sm"), p.dtype_of("x"), p.dtype_of("y")};
  };
  op.validate = [](const Problem& p) {
    const int64_t t = p.dim("threads");
    if (t % 32 != 0 || t > 1024) bad_input(fmt::format("exp_occupancy: threads={} must be a multiple of 32, at most 1024", t));
    if (p.dim("blocks_per_sm") > 64) bad_input(fmt::format("exp_occupancy: blocks_per_sm={} is over 64", p.dim("blocks_per_sm")));
  };
  op.cost = [](const Problem& p) { return Cost{0, 8.0 * static_cast<double>(p.dim("n"))}; };
  op.inputs = [](const Problem& p) { return std::vector<TensorSpec>{{"x", DType::f32, {p.dim("n")}, {}}}; };
  op.outputs = [](const Problem& p) { return std::vector<TensorSpec>{{"y", DType::f32, {p.dim("n")}, {}}}; };
  op.reference = [](const Problem&, std::span<const Tensor> in) { return reference_outputs(to_doubles(in[0])); };
  op.check_cases = [](const Op& self) {
    std::vector<Problem> out;
    for (auto [n, t, b] : std::initializer_list<std::tuple<int64_t, int64_t, int64_t>>{
             {1, 32, 1}, {7, 32, 1}, {33, 64, 2}, {1001, 96, 1}, {4099, 1024, 1}, {12288, 256, 3}})
      out.push_back(make_problem(self, DType::f32, {{"n", n}, {"threads", t}, {"blocks_per_sm", b}}));
    return out;
  };
  op.profile_cases = [](const Op& self) {
    return std::vector<Problem>{make_problem(self, DType::f32, {{"n", int64_t{1} << 20}, {"threads", 128}, {"blocks_per_sm", 8}})};
  };
  op.report_cases = [](const Op& self) {
    std::vector<Problem> out;
    for (int64_t b : {1, 8}) out.push_back(make_problem(self, DType::f32, {{"n", int64_t{1} << 25}, {"threads", 128}, {"blocks_per_sm", b}}));
    return out;
  };
  op.tolerance = [](const Problem&) { return 0.0; };
  return op;
}

}  // namespace kl
