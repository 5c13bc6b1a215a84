// exp_occupancy on the GPU: the grid is blocks_per_sm x SMs blocks, each grid-striding over x
// in float4 units, so the launch alone sets how many warps each SM has in flight.
#include "ops/experiments/experiments.h"
#include "ops/gpu_rung.h"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
__global__ void __launch_bounds__(1024) grid_stride_copy(const float4* __restrict__ x, float4* __restrict__ y, int64_t units,
                                                         const float* __restrict__ x_tail, float* __restrict__ y_tail, int tail) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < units; i += step) y[i] = x[i];
  if (blockIdx.x == 0 && static_cast<int>(threadIdx.x) < tail) y_tail[threadIdx.x] = x_tail[threadIdx.x];
}

// Threads per block come from the problem (`threads`); the grid from blocks_per_sm and the SM count.
void launch(const ExpOccupancyParams& p, const Args& a) {
  const int sms = sm_count();
  const int64_t n = p.n, units = n / 4;
  const auto* x = static_cast<const float*>(a.in[0].data());
  auto* y = static_cast<float*>(a.out[0].data());
  const unsigned blocks = static_cast<unsigned>(p.blocks_per_sm * sms);
  KL_LAUNCH(grid_stride_copy, dim3(blocks), dim3(static_cast<unsigned>(p.threads)), 0, a.stream, reinterpret_cast<const float4*>(x),
            reinterpret_cast<float4*>(y), units, x + 4 * units, y + 4 * units, static_cast<int>(n % 4));
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  // threads: the problem's default; the launch takes the problem's `threads`, so the static
  // occupancy figure holds for threads=256 only.
  Rung<ExpOccupancyParams> r{
      .op = "exp_occupancy",
      .name = "cuda",
      .note = "grid-stride float4 copy; the grid (blocks_per_sm x SMs of `threads`) alone sets the warps in flight per SM",
      .configs = {{.name = "default",
                   .threads = 256,
                   .kernels = {{{KL_KERNEL(grid_stride_copy)}, {"ld.global.nc.v4", "st.global.v4"}, {"LDG.E.128.CONSTANT", "STG.E.128"}}},
                   .run = launch}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
