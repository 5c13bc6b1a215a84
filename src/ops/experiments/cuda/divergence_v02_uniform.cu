// exp_divergence v02: the same elements regrouped by path, so a warp's lanes share a path and the
// other paths' bodies are skipped by a uniform branch (see divergence.cuh). Same output, same FLOPs.
#include "ops/experiments/cuda/divergence.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
void launch(const ExpDivergenceParams& p, const Args& a) { run_path_chains<true>(p, a); }
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<ExpDivergenceParams> r{
      .op = "exp_divergence",
      .name = "cuda_uniform",
      .note = "the same elements regrouped by path: a warp's lanes share a path, the other paths are skipped by a uniform branch",
      .configs = {{.name = "256_threads",
                   .threads = kDivergenceThreads,
                   .kernels = {{{KL_KERNEL(path_chains<true>)}, {"fma.rn.f32"}, {"FFMA"}}},
                   .run = launch}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
