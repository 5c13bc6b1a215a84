// Occupancy of one kernel launch on one architecture: how many blocks of a given shape fit on
// an SM at once and which resource stops the next one. The arithmetic is the CUDA toolkit's own
// (cuda_occupancy.h, cudaOccMaxActiveBlocksPerMultiprocessor), fed with the per-arch limits of
// the hardware database; a launch the hardware refuses is BadInput naming the limit.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "hw/specs.h"

namespace kl {

struct Occupancy {
  std::string arch;
  int threads_per_block = 0;
  int regs_per_thread = 0;
  int64_t smem_per_block = 0;  // dynamic shared memory requested, bytes
  int active_blocks_per_sm = 0;
  int active_warps_per_sm = 0;
  int max_warps_per_sm = 0;
  double occupancy = 0;  // active warps / max warps
  // The resource that stops one more block: the first of "warps", "registers",
  // "shared_memory", "blocks" (cuda_occupancy.h's bit order) among those whose own limit equals
  // the active count. `limiters` lists every one that ties.
  std::string limiter;
  std::vector<std::string> limiters;
  // Blocks per SM each resource alone allows; empty when it does not limit at all (no registers
  // or no shared memory used).
  std::optional<int> blocks_by_warps, blocks_by_registers, blocks_by_shared_memory, blocks_by_blocks;
  int regs_allocated_per_block = 0;   // registers per warp rounded to the allocation unit, x warps
  int64_t smem_allocated_per_block = 0;  // request + reserved, rounded to the allocation unit
};

// False when the build had no cuda_occupancy.h; compute_occupancy then refuses.
bool occupancy_available();

// BadInput for a launch the hardware refuses: threads not in 1..max per block, registers not in
// 0..max per thread, shared memory over the per-block opt-in limit, or registers per block over
// the per-block register file. RuntimeFailure without cuda_occupancy.h.
Occupancy compute_occupancy(const ArchLimits& arch, int threads_per_block, int regs_per_thread, int64_t smem_per_block);

// The occupancy JSON keys of the design (arch ... limiter) plus the per-resource detail.
nlohmann::json occupancy_json(const Occupancy& o);

// One line: why the limiter stops the next block, with its numbers.
std::string limiter_explanation(const Occupancy& o, const ArchLimits& arch);

}  // namespace kl
