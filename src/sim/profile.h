// The simulator as a profiler: Nsight Compute's memory metrics, counted from every access the
// simulated kernels make. Kernels compiled for profiling (GCC's -fsanitize=thread at compile time
// only: each load and store calls a __tsan_* hook, which profile.cpp supplies instead of libtsan)
// report each global or shared access with its address, size, lane and instruction site;
// atomics and the PTX twins report themselves (profile_note in launch.h). Accesses are grouped
// into warp-level instructions (one warp, one site, the n-th time each lane reaches it) and
// counted as ncu counts them; DRAM bytes come from a model of the GPU's L2.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <vector_types.h>

namespace kl::sim {

// Raw counts of one launch, or of several added together.
struct ProfileCounts {
  // Global memory: requests are warp-level instructions with at least one active lane,
  // sectors the distinct 32-byte sectors their active lanes touch.
  std::uint64_t global_ld_requests = 0, global_ld_sectors = 0;
  std::uint64_t global_st_requests = 0, global_st_sectors = 0;
  std::uint64_t global_atom_requests = 0, global_atom_sectors = 0;
  std::uint64_t ldgsts_requests = 0, ldgsts_sectors = 0, ldgsts_bytes = 0;  // cp.async, global side
  std::uint64_t global_lines = 0;  // distinct 128-byte lines of every global request, summed (L1's passes)
  // Shared memory: wavefronts are the passes the 32 banks need; ideal is one per phase with an
  // active lane (a phase: the whole warp for <= 32-bit accesses, half for 64-bit, a quarter for 128-bit).
  std::uint64_t shared_ld_requests = 0, shared_ld_wavefronts = 0, shared_ld_ideal = 0;
  std::uint64_t shared_st_requests = 0, shared_st_wavefronts = 0, shared_st_ideal = 0;
  std::uint64_t shared_atom_requests = 0;
  std::uint64_t ldsm_requests = 0, ldsm_wavefronts = 0, ldsm_ideal = 0, ldsm_bytes = 0;  // ldmatrix
  // Active lanes summed over the global and shared memory instructions (divergence).
  std::uint64_t memory_lanes = 0;
  std::uint64_t mma_f16 = 0, mma_s8 = 0, mma_f8 = 0;  // warp-level mma.sync instructions
  std::uint64_t wgmma_lanes = 0;  // lanes that issued wgmma.mma_async: 32 per warp-level instruction, 128 per warpgroup's
  std::uint64_t tensor_flops = 0;
  // TMA and bulk copies (cp.async.bulk[.tensor]): one thread's instruction each; bytes read or
  // written inside the tensor (a load's out-of-bounds elements are zero-filled, not read).
  std::uint64_t tma_ld_requests = 0, tma_ld_bytes = 0, tma_st_requests = 0, tma_st_bytes = 0;
  // The L2 model: sectors that miss (read from DRAM) and dirty sectors written back.
  std::uint64_t dram_read_bytes = 0, dram_write_bytes = 0;
  std::uint64_t block_barriers = 0;  // bar.sync instructions, warp-level

  void add(const ProfileCounts& o);
  std::uint64_t memory_requests() const;
  // Every field, in declaration order (for adding, writing and reading them).
  static const std::vector<std::uint64_t ProfileCounts::*>& fields();
};

struct LaunchProfile {
  std::string name;            // as the launch names the kernel
  const void* kernel = nullptr;
  dim3 grid, block;
  std::size_t smem = 0;
  std::uint64_t blocks_total = 0, blocks_run = 0;  // fewer run when the grid was sampled
  ProfileCounts counts;        // of the blocks run, not scaled
};

// One kernel's launches added up (by name): what `sim profile` and `sim run --profile` print.
struct KernelProfile {
  std::string name;
  std::uint64_t launches = 0;
  dim3 grid, block;  // of its first launch
  std::uint64_t blocks_total = 0, blocks_run = 0;
  ProfileCounts counts;
  double scale() const { return blocks_run ? double(blocks_total) / double(blocks_run) : 1.0; }
};
// In order of first launch.
std::vector<KernelProfile> profile_by_kernel(const std::vector<LaunchProfile>& launches);

// A launch as one line of text and back (how a `sim run --profile` program reports to kernelab).
std::string profile_record(const LaunchProfile& p);
bool parse_profile_record(const std::string& line, LaunchProfile& out);

struct ProfileOptions {
  std::uint64_t l2_bytes = 0;    // the modelled L2 (least recently used, 128-byte lines of 32-byte sectors); 0: none
  std::uint64_t max_blocks = 0;  // run only the first N blocks of larger grids (counts then scale); 0: all
};

// From now until profile_end, every launch runs its blocks one at a time on the calling thread
// and is counted. Launches of kernels compiled without the instrumentation count only their
// atomics and PTX-twin instructions. The L2 starts empty (as ncu's cache flush leaves it) and
// is kept across the launches of one profile.
void profile_begin(const ProfileOptions& options);
// The launches since profile_begin, with the L2's remaining dirty sectors written back.
std::vector<LaunchProfile> profile_end();
bool profiling();
// The options of the profile in progress (the defaults when none is).
ProfileOptions profile_options();
// Launches a `sim run --profile` program counted in its own process (its L2 empty at its start
// and written back at its end), added to the profile in progress after this process's own.
void profile_add(const std::vector<LaunchProfile>& launches);

struct Metric {
  const char* name;  // ncu's name where ncu has the metric; sim__ and model__ are ours
  double value;
};
// The metrics of some counts, each multiplied by `scale` (the sampling factor; ratios are not).
std::vector<Metric> profile_metrics(const ProfileCounts& c, double scale = 1.0);
// Every metric name with its definition, in the order profile_metrics gives them.
struct MetricDefinition {
  const char* name;
  const char* definition;
};
const std::vector<MetricDefinition>& profile_metric_definitions();

}  // namespace kl::sim
