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
inline int64_t cache_steps(int64_t read_mib, int64_t blocks) {
  const int64_t read = read_mib << 20, per_step = blocks * kChunkFloats * 4;
  return read <= per_step ? 1 : (read + per_step - 1) / per_step;
}
inline int64_t cache_steps(const Problem& p) { return cache_steps(p.dim("read_mib"), p.dim("blocks")); }

// exp_cache_bandwidth and exp_smem_banks: threads per block of the CUDA rungs and columns of
// their outputs.
inline constexpr int kExpThreads = 256;
// exp_smem_banks: the shared array a block reads (4 KiB: 32 banks x 32 words).
inline constexpr int kBankWords = 1024;

// What each experiment's rungs receive, parsed once from the problem (Op::parse): every
// dimension and option typed, and each tensor's dtype (all fp32: experiments take f32 only).

struct ExpStrideParams {
  int64_t n = 0, stride = 1;
  int bytes = 4;  // bytes a thread loads and stores at a time: 4, 8 or 16
  DType x = DType::f32, y = DType::f32;

  int64_t unit_floats() const { return bytes / 4; }                  // floats a unit holds: 1, 2 or 4
  int64_t per_column() const { return n / unit_floats() / stride; }  // units of a column (R)
};

struct ExpOccupancyParams {
  int64_t n = 0, threads = 256, blocks_per_sm = 8;
  DType x = DType::f32, y = DType::f32;
};

struct ExpSmemBanksParams {
  int64_t blocks = 0, stride = 1, reps = 0;
  DType x = DType::f32, y = DType::f32;
};

struct ExpDivergenceParams {
  int64_t n = 0, paths = 1, work = 0;
  DType x = DType::f32, a = DType::f32, b = DType::f32, y = DType::f32;
};

struct ExpLaunchParams {
  int64_t n = 0, kernels = 0;
  DType x = DType::f32, y = DType::f32;
};

struct ExpCacheBandwidthParams {
  int64_t ws_kib = 0, read_mib = 0, blocks = 0;
  DType x = DType::f32, y = DType::f32;

  int64_t ws_floats() const { return ws_kib * 256; }
  int64_t chunks() const { return ws_floats() / kChunkFloats; }
  int64_t steps() const { return cache_steps(read_mib, blocks); }
};

struct ExpCacheLatencyParams {
  int64_t ws_kib = 0, steps = 0;
  DType x = DType::f32, y = DType::f32;
};

}  // namespace kl
