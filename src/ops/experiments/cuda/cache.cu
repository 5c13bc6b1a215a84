// exp_cache_bandwidth and exp_cache_latency on the GPU.
#include "ops/experiments/experiments.h"
#include "ops/gpu_rung.h"

namespace kl::KL_TARGET {

namespace {
// Block b rereads elements [b*n/blocks, (b+1)*n/blocks) `passes` times, coalesced; thread t keeps
// the max of elements lo + t, lo + t + 256, ... A max is exact, so the result does not depend on
// how many passes ran, and every pass's loads are still needed to compute it.
__global__ void __launch_bounds__(kExpThreads) reread_max(const float* __restrict__ x, float* __restrict__ y, int64_t n, int64_t passes) {
  const int64_t lo = blockIdx.x * n / gridDim.x, hi = (blockIdx.x + 1) * n / gridDim.x;
  float best = -INFINITY;
  for (int64_t r = 0; r < passes; ++r)
    for (int64_t i = lo + threadIdx.x; i < hi; i += kExpThreads) best = fmaxf(best, x[i]);
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
  KL_LAUNCH(reread_max, dim3(static_cast<unsigned>(p.dim("blocks"))), dim3(kExpThreads), 0, a.stream,
            static_cast<const float*>(a.in[0].data()), static_cast<float*>(a.out[0].data()), p.dim("ws_kib") * 256, cache_passes(p));
}

void exp_cache_latency_v01(const Problem& p, const Args& a) {
  KL_LAUNCH(chase, dim3(1), dim3(1), 0, a.stream, static_cast<const unsigned*>(a.in[0].data()), static_cast<float*>(a.out[0].data()),
            p.dim("steps"));
}

}  // namespace kl::KL_TARGET
