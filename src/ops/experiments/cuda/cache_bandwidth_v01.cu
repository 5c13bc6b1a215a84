// exp_cache_bandwidth on the GPU: step r, block b reads chunk (b + r * blocks) mod chunks, one
// float4 per thread (see experiments.h), keeping a max per thread. A max is exact and needs
// every load, whatever the number of steps.
#include "ops/experiments/experiments.h"
#include "ops/gpu_rung.h"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
__global__ void __launch_bounds__(kExpThreads) sweep_max(const float4* __restrict__ x, float* __restrict__ y, int64_t chunks, int64_t steps) {
  const int64_t advance = gridDim.x % chunks;
  int64_t c = blockIdx.x % chunks;
  float best = -INFINITY;
  for (int64_t r = 0; r < steps; ++r) {
    const float4 v = x[c * (kChunkFloats / 4) + threadIdx.x];
    best = fmaxf(best, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
    c += advance;
    if (c >= chunks) c -= chunks;
  }
  y[static_cast<int64_t>(blockIdx.x) * kExpThreads + threadIdx.x] = best;
}

void launch(const ExpCacheBandwidthParams& p, const Args& a) {
  KL_LAUNCH(sweep_max, dim3(static_cast<unsigned>(p.blocks)), dim3(kExpThreads), 0, a.stream, static_cast<const float4*>(a.in[0].data()),
            static_cast<float*>(a.out[0].data()), p.chunks(), p.steps());
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<ExpCacheBandwidthParams> r{
      .op = "exp_cache_bandwidth",
      .name = "cuda",
      .note = "each block sweeps the whole set in 4 KiB chunks, one float4 load per thread, keeping a max per thread",
      .configs = {{.name = "256_threads",
                   .threads = kExpThreads,
                   .kernels = {{{KL_KERNEL(sweep_max)}, {"ld.global.nc.v4.f32", "max.f32"}, {"LDG.E.128.CONSTANT", "FMNMX"}}},
                   .run = launch}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
