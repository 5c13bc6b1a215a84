// A CUDA rung run once on the simulator's profiling build (sim/profile.h): its kernels' ncu-style
// counts, the modelled DRAM bytes against the op's fewest, and a modelled time from the counts
// and a GPU's figures. Used by `kernelab sim profile` and the report.
#pragma once
#include <string>
#include <vector>

#include "hw/specs.h"
#include "kernelab/harness.h"
#include "sim/profile.h"

namespace kl {

// The busiest unit's time at its peak rate: a lower bound from the counts, never a measurement.
struct ModelledTime {
  double seconds = 0;
  std::string bound;  // "DRAM", "L1", "shared memory" or "tensor cores"
  std::string source; // the figures used
};
ModelledTime modelled_time(const sim::ProfileCounts& c, double scale, const GpuSpec& gpu);

struct RungProfile {
  std::string variant, config;
  std::vector<sim::KernelProfile> kernels;  // named as the config declares them
  sim::ProfileCounts total;                 // every kernel's counts, unscaled
  double scale = 1;                         // total blocks over blocks run (1: nothing sampled)
  double min_bytes = 0;                     // the op's fewest bytes for the problem
  ModelledTime time;
  CheckResult check;                        // the profiled run against the reference (skipped when sampled)
  double seconds = 0;                       // wall time of that run (upload, launches, check)
  bool sampled() const { return scale != 1; }
  double dram_bytes() const { return scale * double(total.dram_read_bytes + total.dram_write_bytes); }
  // Bytes of the sectors the global accesses request from L2 (what L1 moves; 32 per sector).
  double sector_bytes() const {
    return scale * 32.0 * double(total.global_ld_sectors + total.global_st_sectors + total.global_atom_sectors + total.ldgsts_sectors);
  }
};

// Runs config c of variant v on `sim_device` (the sim backend) with every launch counted.
RungProfile profile_variant(const Op& op, const Variant& v, const Config& c, const Prepared& prep, Device& sim_device,
                            const sim::ProfileOptions& options, const GpuSpec& gpu);

}  // namespace kl
