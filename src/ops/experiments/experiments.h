// The execution-model and memory-hierarchy experiments: each is an op with a cost model, a
// float64 reference and CUDA rungs (some with a CPU twin), so `kernelab bench`, `sweep` and
// `check --backend sim` treat them like any other op. What each shows is in its `counting`.
#pragma once
#include <cstdint>
#include <vector>

#include "kernelab/op.h"

namespace kl {

// exp_stride: y unit t of (s, R) = x unit r*s + c where t = c*R + r, R = units / s.
// Reads one access-width unit `stride` units apart across a warp; writes contiguous.
inline int64_t stride_unit_floats(const Problem& p) { return static_cast<int64_t>(p.opt_number("bytes")) / 4; }

// exp_cache_latency: slots of the pointer chase sit kChaseSlotFloats floats (128 bytes) apart,
// one L1 line each, so every dependent load touches a new line.
inline constexpr int64_t kChaseSlotFloats = 32;

// exp_cache_bandwidth: the working set is chunks of kChunkFloats floats (4 KiB: one float4 per
// thread of a block). At step r block b reads chunk (b + r * blocks) mod chunks, so each step's
// blocks read different chunks and every block ranges over the whole set: the set, not a
// block's share, is what must fit in a cache level. Steps: read_mib / (blocks * 4 KiB), at least 1.
inline constexpr int64_t kChunkFloats = 1024;
inline int64_t cache_steps(const Problem& p) {
  const int64_t read = p.dim("read_mib") << 20, per_step = p.dim("blocks") * kChunkFloats * 4;
  return read <= per_step ? 1 : (read + per_step - 1) / per_step;
}

// exp_cache_bandwidth and exp_smem_banks: threads per block of the CUDA rungs and columns of
// their outputs.
inline constexpr int kExpThreads = 256;
// exp_smem_banks: the shared array a block reads (4 KiB: 32 banks x 32 words).
inline constexpr int kBankWords = 1024;

std::vector<Variant> exp_stride_gpu_variants();
std::vector<Variant> exp_occupancy_gpu_variants();
std::vector<Variant> exp_smem_banks_gpu_variants();
std::vector<Variant> exp_divergence_gpu_variants();
std::vector<Variant> exp_launch_gpu_variants();
std::vector<Variant> exp_cache_bandwidth_gpu_variants();
std::vector<Variant> exp_cache_latency_gpu_variants();

}  // namespace kl
