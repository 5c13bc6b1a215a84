// exp_launch v01: `kernels` launches of a one-line kernel issued one by one on the stream: each
// pays the CPU's launch call and the GPU's dispatch.
#include "ops/experiments/cuda/launch.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
void launch(const ExpLaunchParams& p, const Args& a) { issue(p, a, static_cast<cudaStream_t>(a.stream)); }
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<ExpLaunchParams> r{
      .op = "exp_launch",
      .name = "cuda_stream",
      .note = "one launch per pass on the stream: each pays the CPU's launch call and the GPU's dispatch",
      .configs = {{.name = "256_threads", .threads = kLaunchThreads, .kernels = {{{KL_KERNEL(add_step)}, {"add.f32"}, {"FADD"}}}, .run = launch}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
