// exp_smem_banks on the GPU: after one barrier, lane l of every warp loads word
// (l*stride + k) mod 1024 for k = 0..reps-1. Adding k moves all lanes together, so each load
// has the same gcd(stride, 32)-way conflict; the mod keeps the compiler from merging loads.
#include "ops/experiments/experiments.h"
#include "ops/gpu_rung.h"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
__global__ void __launch_bounds__(kExpThreads) bank_sweep(const float* __restrict__ x, float* __restrict__ y, int stride, int reps) {
  KL_SHARED(float, words, [kBankWords]);
  for (int i = threadIdx.x; i < kBankWords; i += blockDim.x) words[i] = x[i];
  __syncthreads();
  const int base = static_cast<int>(threadIdx.x % 32) * stride;
  float acc = 0;
  for (int k = 0; k < reps; ++k) acc += words[(base + k) & (kBankWords - 1)];
  y[static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x] = acc;
}

void launch(const ExpSmemBanksParams& p, const Args& a) {
  KL_LAUNCH(bank_sweep, dim3(static_cast<unsigned>(p.blocks)), dim3(kExpThreads), 0, a.stream, static_cast<const float*>(a.in[0].data()),
            static_cast<float*>(a.out[0].data()), static_cast<int>(p.stride), static_cast<int>(p.reps));
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<ExpSmemBanksParams> r{
      .op = "exp_smem_banks",
      .name = "cuda",
      .note = "every lane loads word (lane*stride + k) mod 1024 of a shared array: a gcd(stride, 32)-way bank conflict per load",
      .configs = {{.name = "256_threads",
                   .threads = kExpThreads,
                   .kernels = {{{KL_KERNEL(bank_sweep)}, {"ld.shared.f32", "bar.sync"}, {"LDS", "BAR.SYNC"}}},
                   .run = launch}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
