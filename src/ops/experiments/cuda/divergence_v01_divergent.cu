// exp_divergence v01: a thread per element in order, so a warp's 32 consecutive elements follow
// up to 32 paths and the warp runs their FMA chains one after another (see divergence.cuh).
#include "ops/experiments/cuda/divergence.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
void launch(const ExpDivergenceParams& p, const Args& a) { run_path_chains<false>(p, a); }
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<ExpDivergenceParams> r{
      .op = "exp_divergence",
      .name = "cuda_divergent",
      .note = "a thread per element in order: a warp holds up to 32 paths and runs their FMA chains one after another",
      .configs = {{.name = "256_threads",
                   .threads = kDivergenceThreads,
                   .kernels = {{{KL_KERNEL(path_chains<false>)}, {"fma.rn.f32"}, {"FFMA"}}},
                   .run = launch}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
