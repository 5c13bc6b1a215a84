// `kernelab fuse`: one expression through both schedules in the simulator, checked against the
// float64 evaluation, with the NVRTC compile (when an arch is given) and its fallback.
#pragma once
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "jit/codegen.h"
#include "jit/expr.h"
#include "jit/nvrtc.h"

namespace kl::jit {

struct FuseRequest {
  std::string expr;
  int64_t rows = 127, cols = 1000;
  FuseDType dtype = FuseDType::fp32;
  std::set<std::string> vectors;   // inputs that are row vectors (length cols)
  std::optional<std::string> arch; // NVRTC for this arch (sm_XX[a])
  uint64_t seed = 1;
  bool compile_only = false;       // with arch: NVRTC alone, no simulator run and no check
  bool profile = false;            // each schedule also run in the simulator's profiling build
};

// What the simulator profiler counted over one schedule's launches: the global-memory bytes the
// warps requested (32-byte sectors, loads and stores) and the DRAM bytes behind an L2 the size of
// the H100 SXM's (misses read, dirty sectors written back).
struct ScheduleTraffic {
  int64_t launches = 0;
  int64_t requested_bytes = 0;
  int64_t dram_bytes = 0;
};

struct OutputCheck {
  std::string name;
  Kind kind;
  double max_rel_err = 0;          // the schedule run: fused, or unfused after a fallback
  double max_rel_err_unfused = 0;
};

struct FuseReport {
  Program program;
  std::string schedule;                // "fused" or "unfused"
  std::optional<std::string> fallback; // why the fused kernel did not run (one line)
  std::vector<OutputCheck> outputs;
  double tolerance = 0;
  bool passed = false;
  int64_t bytes_unfused = 0, bytes_fused = 0;
  int kernels_unfused = 0, passes_fused = 0;
  std::optional<JitResult> jit;        // with an arch, when NVRTC produced PTX
  std::optional<ScheduleTraffic> traffic_unfused, traffic_fused;  // with profile
  int64_t profile_l2_bytes = 0;
  std::string fused_source, unfused_source;
};


// Never fails for an NVRTC failure (that is the fallback); BadInput for a malformed expression
// or shape, RuntimeFailure when the simulator cannot run the program.
FuseReport run_fuse(const FuseRequest& request);

// One schedule ("fused" or "unfused") of p in the simulator: `inputs` the inputs' bytes in
// Program::inputs order (each row-major, in the dtype); returns the outputs' bytes likewise.
// With race_check, every launch runs forward and reversed (`sim run --race-check`). RuntimeFailure
// when the run fails, a race found included.
std::string simulate_schedule(const Program& p, FuseDType t, const std::string& schedule, int64_t rows, int64_t cols,
                              const std::string& inputs, bool race_check = false);
// The same on the program's profiling build (`sim run --profile`), for the profile in progress
// in this process: run with its modelled L2 and block sampling, its launches added to it
// (sim::profile_add). RuntimeFailure when the run fails.
std::string simulate_schedule_profiled(const Program& p, FuseDType t, const std::string& schedule, int64_t rows, int64_t cols,
                                       const std::string& inputs);

// The inputs as generated for a request (float64 values, already rounded to the dtype): uniform
// in [-2, 2] with |x| >= 1/64 (never zero), or [0.5, 2] for an input that log, sqrt or rsqrt
// takes directly.
std::vector<std::vector<double>> fuse_inputs(const Program& p, const FuseRequest& request);

}  // namespace kl::jit
