// exp_smem_banks: shared-memory load bandwidth against the stride between the words a warp's
// lanes load: stride s puts gcd(s, 32) lanes on each bank they touch, a gcd(s, 32)-way conflict.
#include <fmt/format.h>

#include "kernelab/error.h"
#include "ops/experiments/experiments.h"
#include "ops/ops.h"

namespace kl {

namespace {
// Word of the shared array lane reads at step k (the CUDA rung's address, see cuda/smem_banks_v01.cu).
int64_t bank_word(int64_t lane, int64_t stride, int64_t k) { return (lane * stride + k) % kBankWords; }
}  // namespace

Op make_exp_smem_banks_op() {
  Op op;
  op.experiment = true;
  op.name = "exp_smem_banks";
  op.summary = "experiment: each block loads a 4 KiB shared array, then every lane sums `reps` words at lane*stride + k";
  op.counting =
      "reps FLOPs (adds) per thread; bytes: shared-memory bytes loaded, 4*reps per thread (not DRAM traffic: compare "
      "with the SM's 32 banks x 4 bytes per clock, not with the roofline's memory bound). Stride s makes a "
      "gcd(s, 32)-way bank conflict: the load replays that many times, so time grows with gcd(s, 32)";
  op.dims = {{"blocks", 1024, "blocks of 256 threads"}, {"stride", 1, "words between neighbouring lanes' loads (1 to 32)"},
             {"reps", 4096, "words each thread loads"}};
  op.dtypes = {DType::f32};
  op.parse = [](const Problem& p) -> std::any {
    return ExpSmemBanksParams{p.dim("blocks"), p.dim("stride"), p.dim("reps"), p.dtype_of("x"), p.dtype_of("y")};
  };
  op.validate = [](const Problem& p) {
    if (p.dim("stride") > 32) bad_input(fmt::format("exp_smem_banks: stride={} is over 32 (32 banks)", p.dim("stride")));
    if (p.dim("reps") > (int64_t{1} << 24)) bad_input(fmt::format("exp_smem_banks: reps={} is over 2^24", p.dim("reps")));
    if (p.dim("blocks") > (int64_t{1} << 24)) bad_input(fmt::format("exp_smem_banks: blocks={} is over 2^24", p.dim("blocks")));
  };
  op.cost = [](const Problem& p) {
    const double loads = static_cast<double>(p.dim("blocks")) * kExpThreads * static_cast<double>(p.dim("reps"));
    return Cost{loads, 4 * loads};
  };
  op.inputs = [](const Problem&) { return std::vector<TensorSpec>{{"x", DType::f32, {kBankWords}, {}}}; };
  op.outputs = [](const Problem& p) { return std::vector<TensorSpec>{{"y", DType::f32, {p.dim("blocks"), kExpThreads}, {}}}; };
  op.reference = [](const Problem& p, std::span<const Tensor> in) {
    const int64_t blocks = p.dim("blocks"), stride = p.dim("stride"), reps = p.dim("reps");
    const std::vector<double> x = to_doubles(in[0]);
    std::vector<double> row(kExpThreads), y;
    for (int64_t t = 0; t < kExpThreads; ++t)
      for (int64_t k = 0; k < reps; ++k) row[t] += x[bank_word(t % 32, stride, k)];
    for (int64_t b = 0; b < blocks; ++b) y.insert(y.end(), row.begin(), row.end());
    return reference_outputs(std::move(y));
  };
  op.check_cases = [](const Op& self) {
    std::vector<Problem> out;
    for (int64_t s : {1, 2, 3, 8, 32})
      for (auto [b, r] : std::initializer_list<std::pair<int64_t, int64_t>>{{1, 1}, {3, 33}, {2, 1100}})
        out.push_back(make_problem(self, DType::f32, {{"blocks", b}, {"stride", s}, {"reps", r}}));
    return out;
  };
  op.profile_cases = [](const Op& self) {  // stride k: a gcd(k, 32)-way conflict
    std::vector<Problem> out;
    for (int64_t s : {1, 2, 8, 32}) out.push_back(make_problem(self, DType::f32, {{"blocks", 8}, {"stride", s}, {"reps", 64}}));
    return out;
  };
  op.report_cases = [](const Op& self) {
    std::vector<Problem> out;
    for (int64_t s : {1, 2, 32}) out.push_back(make_problem(self, DType::f32, {{"stride", s}}));
    return out;
  };
  // fp32 sums of up to `reps` words of [-1, 1) in order against float64.
  op.tolerance = [](const Problem& p) { return std::max(default_tolerance(DType::f32), 2e-7 * static_cast<double>(p.dim("reps"))); };
  return op;
}

}  // namespace kl
