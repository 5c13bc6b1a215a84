// The CUDA rungs of the experiments (src/ops/experiments/cuda).
#include "ops/experiments/experiments.h"
#include "ops/gpu_variants.h"

KL_DECLARE_GPU_RUNG(exp_stride_v01)
KL_DECLARE_GPU_RUNG(exp_occupancy_v01)
KL_DECLARE_GPU_RUNG(exp_smem_banks_v01)
KL_DECLARE_GPU_RUNG(exp_divergence_v01_divergent)
KL_DECLARE_GPU_RUNG(exp_divergence_v02_uniform)
KL_DECLARE_GPU_RUNG(exp_launch_v01_stream)
KL_DECLARE_GPU_RUNG(exp_launch_v02_graph)
KL_DECLARE_GPU_RUNG(exp_cache_bandwidth_v01)
KL_DECLARE_GPU_RUNG(exp_cache_latency_v01)

namespace kl {

std::vector<Variant> exp_stride_gpu_variants() {
  return {gpu_variant("cuda", "a thread per unit, a grid row per column of units: loads `stride` units apart across a warp, stores contiguous",
                      KL_GPU_RUNG(exp_stride_v01), "experiments/cuda/stride.cu", {"ld.global.nc.v4", "ld.global.nc.v2", "st.global.v4"}, 256)};
}

std::vector<Variant> exp_occupancy_gpu_variants() {
  return {gpu_variant("cuda", "grid-stride float4 copy; the grid (blocks_per_sm x SMs of `threads`) alone sets the warps in flight per SM",
                      KL_GPU_RUNG(exp_occupancy_v01), "experiments/cuda/occupancy.cu", {"ld.global.nc.v4", "st.global.v4"}, 256)};
}

std::vector<Variant> exp_smem_banks_gpu_variants() {
  return {gpu_variant("cuda", "every lane loads word (lane*stride + k) mod 1024 of a shared array: a gcd(stride, 32)-way bank conflict per load",
                      KL_GPU_RUNG(exp_smem_banks_v01), "experiments/cuda/smem_banks.cu", {"ld.shared.f32", "bar.sync"}, kExpThreads)};
}

std::vector<Variant> exp_divergence_gpu_variants() {
  return {gpu_variant("cuda_divergent", "a thread per element in order: a warp holds up to 32 paths and runs their FMA chains one after another",
                      KL_GPU_RUNG(exp_divergence_v01_divergent), "experiments/cuda/divergence.cu", {"fma.rn.f32"}, 256),
          gpu_variant("cuda_uniform", "the same elements regrouped by path: a warp's lanes share a path, the other paths are skipped by a uniform branch",
                      KL_GPU_RUNG(exp_divergence_v02_uniform), "experiments/cuda/divergence.cu", {"fma.rn.f32"}, 256)};
}

std::vector<Variant> exp_launch_gpu_variants() {
  return {gpu_variant("cuda_stream", "one launch per pass on the stream: each pays the CPU's launch call and the GPU's dispatch",
                      KL_GPU_RUNG(exp_launch_v01_stream), "experiments/cuda/launch.cu", {}, 256),
          gpu_variant("cuda_graph", "the passes captured once into a CUDA Graph, replayed by one cudaGraphLaunch: one CPU call for all kernels",
                      KL_GPU_RUNG(exp_launch_v02_graph), "experiments/cuda/launch.cu", {}, 256)};
}

std::vector<Variant> exp_cache_bandwidth_gpu_variants() {
  return {gpu_variant("cuda", "each block sweeps the whole set in 4 KiB chunks, one float4 load per thread, keeping a max per thread",
                      KL_GPU_RUNG(exp_cache_bandwidth_v01), "experiments/cuda/cache.cu", {"ld.global.nc.v4.f32", "max.f32"}, kExpThreads)};
}

std::vector<Variant> exp_cache_latency_gpu_variants() {
  return {gpu_variant("cuda", "one thread, each load's address the value of the one before",
                      KL_GPU_RUNG(exp_cache_latency_v01), "experiments/cuda/cache.cu", {"ld.global.nc.u32"}, 1)};
}

}  // namespace kl
