// The occupancy calculator: the database's per-arch limits go into the toolkit's
// cudaOccDeviceProp, the launch into cudaOccFuncAttributes, and cudaOccMaxActiveBlocksPerMultiprocessor
// does the arithmetic. Launches the hardware refuses are caught first, each with its own message.
#include "hw/occupancy.h"

#include <fmt/format.h>

#include <climits>

#include "kernelab/error.h"

#ifdef KERNELAB_HAVE_CUDA_OCCUPANCY
#include <cuda_occupancy.h>
#endif

namespace kl {

namespace {

constexpr int kWarpSize = 32;
// Shared memory a block may use without the opt-in: 48 KB on every arch since Kepler.
constexpr size_t kDefaultSmemPerBlock = 48 * 1024;

int round_up(int x, int unit) { return (x + unit - 1) / unit * unit; }

// Refuses what no launch can do on this arch, naming the limit.
void check_launch(const ArchLimits& a, int threads, int regs, int64_t smem) {
  if (threads <= 0) bad_input(fmt::format("threads per block must be positive (got {})", threads));
  if (threads > a.max_threads_per_block)
    bad_input(fmt::format("threads per block {} exceeds the {} a block may have on {}", threads, a.max_threads_per_block, a.arch));
  if (regs < 0) bad_input(fmt::format("registers per thread must be >= 0 (got {})", regs));
  if (regs > a.max_regs_per_thread)
    bad_input(fmt::format("registers per thread {} exceeds the {} a thread may use on {}", regs, a.max_regs_per_thread, a.arch));
  if (smem < 0) bad_input(fmt::format("shared memory per block must be >= 0 bytes (got {})", smem));
  if (smem > a.max_smem_per_block)
    bad_input(fmt::format("shared memory per block {} bytes exceeds the {} bytes ({} KiB, with the opt-in) a block may use on {}",
                          smem, a.max_smem_per_block, a.max_smem_per_block / 1024, a.arch));
  // The hardware checks a block's registers as if its warps were spread over all four SM
  // sub-partitions: warps rounded up to the allocation granularity (cuda_occupancy.h says so).
  const int warps = (threads + kWarpSize - 1) / kWarpSize;
  const int per_warp = round_up(regs * kWarpSize, a.reg_alloc_unit);
  const int64_t needed = int64_t{per_warp} * round_up(warps, a.warp_alloc_granularity);
  if (needed > a.max_regs_per_block) {
    const int rounded = round_up(warps, a.warp_alloc_granularity);
    bad_input(fmt::format("a block of {} threads at {} registers per thread needs {} registers ({} x 32 = {} per warp, "
                          "allocated as {}, x {} warps{}), more than the {} a block may have on {}",
                          threads, regs, needed, regs, regs * kWarpSize, per_warp, rounded,
                          rounded == warps ? "" : fmt::format(" ({} rounded up to a multiple of {})", warps, a.warp_alloc_granularity),
                          a.max_regs_per_block, a.arch));
  }
}

[[maybe_unused]] std::optional<int> limit(int blocks) { return blocks == INT_MAX ? std::nullopt : std::optional<int>(blocks); }

nlohmann::json opt_json(const std::optional<int>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

}  // namespace

#ifdef KERNELAB_HAVE_CUDA_OCCUPANCY

bool occupancy_available() { return true; }

Occupancy compute_occupancy(const ArchLimits& a, int threads, int regs, int64_t smem) {
  check_launch(a, threads, regs, smem);

  cudaOccDeviceProp prop;
  prop.computeMajor = a.cc_major;
  prop.computeMinor = a.cc_minor;
  prop.maxThreadsPerBlock = a.max_threads_per_block;
  prop.maxThreadsPerMultiprocessor = a.max_threads_per_sm;
  prop.regsPerBlock = a.max_regs_per_block;
  prop.regsPerMultiprocessor = a.regs_per_sm;
  prop.warpSize = kWarpSize;
  prop.sharedMemPerBlock = kDefaultSmemPerBlock;
  prop.sharedMemPerMultiprocessor = static_cast<size_t>(a.smem_per_sm);
  prop.numSms = 1;  // occupancy is per SM; the count does not enter
  prop.sharedMemPerBlockOptin = static_cast<size_t>(a.max_smem_per_block);
  prop.reservedSharedMemPerBlock = static_cast<size_t>(a.reserved_smem_per_block);

  cudaOccFuncAttributes attr;  // what cudaFuncGetAttributes would report for such a kernel
  attr.maxThreadsPerBlock = a.max_threads_per_block;
  attr.numRegs = regs;
  attr.sharedSizeBytes = 0;  // all shared memory is the dynamic request
  attr.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;  // the kernel opted in to the per-block maximum
  attr.maxDynamicSharedSizeBytes = static_cast<size_t>(a.max_smem_per_block);
  attr.numBlockBarriers = 1;  // __syncthreads' barrier 0, as the runtime's conversion assumes

  cudaOccDeviceState state;  // default carveout: the most shared memory the arch offers
  cudaOccResult r{};
  cudaOccError err = cudaOccMaxActiveBlocksPerMultiprocessor(&r, &prop, &attr, &state, threads, static_cast<size_t>(smem));
  if (err != CUDA_OCC_SUCCESS)
    runtime_failure(fmt::format("cuda_occupancy.h refused {} (error {}): the toolkit's calculator does not know this arch",
                                a.arch, static_cast<int>(err)));
  if (r.activeBlocksPerMultiprocessor <= 0)
    bad_input(fmt::format("no block of {} threads, {} registers per thread and {} bytes of shared memory fits on an SM of {}",
                          threads, regs, smem, a.arch));

  Occupancy o;
  o.arch = a.arch;
  o.threads_per_block = threads;
  o.regs_per_thread = regs;
  o.smem_per_block = smem;
  o.active_blocks_per_sm = r.activeBlocksPerMultiprocessor;
  o.active_warps_per_sm = o.active_blocks_per_sm * ((threads + kWarpSize - 1) / kWarpSize);
  o.max_warps_per_sm = a.max_threads_per_sm / kWarpSize;
  o.occupancy = static_cast<double>(o.active_warps_per_sm) / o.max_warps_per_sm;
  const std::pair<unsigned, const char*> bits[] = {{OCC_LIMIT_WARPS, "warps"},
                                                   {OCC_LIMIT_REGISTERS, "registers"},
                                                   {OCC_LIMIT_SHARED_MEMORY, "shared_memory"},
                                                   {OCC_LIMIT_BLOCKS, "blocks"}};
  for (const auto& [bit, name] : bits)
    if (r.limitingFactors & bit) o.limiters.push_back(name);
  if (o.limiters.empty()) runtime_failure(fmt::format("cuda_occupancy.h named no limiting resource on {}", a.arch));
  o.limiter = o.limiters.front();
  o.blocks_by_warps = limit(r.blockLimitWarps);
  o.blocks_by_registers = limit(r.blockLimitRegs);
  o.blocks_by_shared_memory = limit(r.blockLimitSharedMem);
  o.blocks_by_blocks = limit(r.blockLimitBlocks);
  o.regs_allocated_per_block = r.allocatedRegistersPerBlock;
  o.smem_allocated_per_block = static_cast<int64_t>(r.allocatedSharedMemPerBlock);
  return o;
}

#else

bool occupancy_available() { return false; }

Occupancy compute_occupancy(const ArchLimits& a, int threads, int regs, int64_t smem) {
  check_launch(a, threads, regs, smem);
  runtime_failure(
      "occupancy: this build has no cuda_occupancy.h (the CUDA toolkit's header-only calculator); install the CUDA "
      "toolkit headers and re-run cmake");
}

#endif

nlohmann::json occupancy_json(const Occupancy& o) {
  return {{"arch", o.arch},
          {"threads_per_block", o.threads_per_block},
          {"regs_per_thread", o.regs_per_thread},
          {"smem_per_block", o.smem_per_block},
          {"active_blocks_per_sm", o.active_blocks_per_sm},
          {"active_warps_per_sm", o.active_warps_per_sm},
          {"max_warps_per_sm", o.max_warps_per_sm},
          {"occupancy", o.occupancy},
          {"limiter", o.limiter},
          {"limiters", o.limiters},
          {"block_limits",
           {{"warps", opt_json(o.blocks_by_warps)},
            {"registers", opt_json(o.blocks_by_registers)},
            {"shared_memory", opt_json(o.blocks_by_shared_memory)},
            {"blocks", opt_json(o.blocks_by_blocks)}}},
          {"regs_allocated_per_block", o.regs_allocated_per_block},
          {"smem_allocated_per_block", o.smem_allocated_per_block},
          {"calculator", "cuda_occupancy.h cudaOccMaxActiveBlocksPerMultiprocessor"}};
}

std::string limiter_explanation(const Occupancy& o, const ArchLimits& a) {
  const int warps = (o.threads_per_block + kWarpSize - 1) / kWarpSize;
  const int b = o.active_blocks_per_sm;
  if (o.limiter == "warps")
    return fmt::format("warps: a block is {} warp{}, and {} blocks fill {} of the SM's {} warp slots", warps,
                       warps == 1 ? "" : "s", b, b * warps, o.max_warps_per_sm);
  if (o.limiter == "registers")
    return fmt::format("registers: a block holds {} registers ({} per thread, {} per warp after rounding to {}), and {} "
                       "blocks is all the SM's {} registers allow (warps get registers in groups of {})",
                       o.regs_allocated_per_block, o.regs_per_thread, o.regs_allocated_per_block / warps, a.reg_alloc_unit, b,
                       a.regs_per_sm, a.warp_alloc_granularity);
  if (o.limiter == "shared_memory")
    return fmt::format("shared memory: a block takes {} bytes ({} requested + {} reserved, rounded up to {}), and {} "
                       "blocks is all the SM's {} bytes allow",
                       o.smem_allocated_per_block, o.smem_per_block, a.reserved_smem_per_block, a.smem_alloc_unit, b,
                       a.smem_per_sm);
  return fmt::format("blocks: the SM holds at most {} resident blocks, and warps, registers and shared memory would allow more",
                     a.max_blocks_per_sm);
}

}  // namespace kl
