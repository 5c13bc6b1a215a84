// exp_cache_bandwidth and exp_cache_latency on the GPU.
#include "ops/experiments/experiments.h"
#include "ops/gpu_rung.h"

namespace kl::KL_TARGET {

namespace {
// Step r: block b reads chunk (b + r * blocks) mod chunks, one float4 per thread (see
// experiments.h). A max is exact and needs every load, whatever the number of steps.
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

// One thread, `steps` dependent loads: at = words[at].
__global__ void chase(const unsigned* __restrict__ words, float* __restrict__ y, int64_t steps) {
  unsigned at = 0;
  for (int64_t k = 0; k < steps; ++k) at = words[at];
  y[0] = static_cast<float>(at / kChaseSlotFloats);
}
}  // namespace

void exp_cache_bandwidth_v01(const Problem& p, const Args& a) {
  KL_LAUNCH(sweep_max, dim3(static_cast<unsigned>(p.dim("blocks"))), dim3(kExpThreads), 0, a.stream,
            static_cast<const float4*>(a.in[0].data()), static_cast<float*>(a.out[0].data()), p.dim("ws_kib") * 256 / kChunkFloats,
            cache_steps(p));
}

void exp_cache_latency_v01(const Problem& p, const Args& a) {
  KL_LAUNCH(chase, dim3(1), dim3(1), 0, a.stream, static_cast<const unsigned*>(a.in[0].data()), static_cast<float*>(a.out[0].data()),
            p.dim("steps"));
}

}  // namespace kl::KL_TARGET
