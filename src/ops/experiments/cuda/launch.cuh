// What the two exp_launch rungs share: the one-line kernel and the loop that issues `kernels`
// launches of it on a stream (v01 on the rung's stream, v02 on a stream being captured into a graph).
#pragma once
#include "ops/experiments/experiments.h"
#include "ops/gpu_rung.h"

namespace kl::KL_TARGET {

namespace {
constexpr int kLaunchThreads = 256;

__global__ void __launch_bounds__(kLaunchThreads) add_step(const float* __restrict__ src, float* __restrict__ y, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) y[i] = src[i] + 1.0f / 64;
}

void issue(const ExpLaunchParams& p, const Args& a, cudaStream_t stream) {
  const int n = static_cast<int>(p.n);
  const auto* x = static_cast<const float*>(a.in[0].data());
  auto* y = static_cast<float*>(a.out[0].data());
  for (int64_t k = 0; k < p.kernels; ++k)
    KL_LAUNCH(add_step, dim3(static_cast<unsigned>((n + kLaunchThreads - 1) / kLaunchThreads)), dim3(kLaunchThreads), 0, stream,
              k == 0 ? x : y, y, n);
}
}  // namespace

}  // namespace kl::KL_TARGET
