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

// exp_cache_bandwidth: passes over the ws_kib working set that read at least read_mib MiB.
inline int64_t cache_passes(const Problem& p) {
  const int64_t ws_bytes = p.dim("ws_kib") * 1024, read = p.dim("read_mib") << 20;
  return read <= ws_bytes ? 1 : (read + ws_bytes - 1) / ws_bytes;
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
