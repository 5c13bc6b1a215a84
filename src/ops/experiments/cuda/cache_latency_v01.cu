// exp_cache_latency on the GPU: one thread, `steps` dependent loads (at = words[at]), each
// load's address the value of the one before.
#include "ops/experiments/experiments.h"
#include "ops/gpu_rung.h"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
__global__ void chase(const unsigned* __restrict__ words, float* __restrict__ y, int64_t steps) {
  unsigned at = 0;
  for (int64_t k = 0; k < steps; ++k) at = words[at];
  y[0] = static_cast<float>(at / kChaseSlotFloats);
}

void launch(const ExpCacheLatencyParams& p, const Args& a) {
  KL_LAUNCH(chase, dim3(1), dim3(1), 0, a.stream, static_cast<const unsigned*>(a.in[0].data()), static_cast<float*>(a.out[0].data()), p.steps);
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<ExpCacheLatencyParams> r{
      .op = "exp_cache_latency",
      .name = "cuda",
      .note = "one thread, each load's address the value of the one before",
      .configs = {{.name = "1_thread", .threads = 1, .kernels = {{{KL_KERNEL(chase)}, {"ld.global.nc.u32"}, {"LDG.E.CONSTANT"}}}, .run = launch}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
