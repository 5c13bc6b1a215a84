// The report's "CUDA variants" section: each registered CUDA rung with whether it passes in the
// simulator, its static resources (build/cuda_static: cuobjdump of the built objects), and whether a committed GPU results
// file (bench/results/<gpu>/*.json) holds a point for it: "verified on <gpu> at <date> (<file>)"
// or "not yet run on a GPU". A point there means the GPU ran the rung and its result passed the
// reference check (bench_variant times only a checked result).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "kernelab/harness.h"
#include "report/report.h"

namespace kl {

struct GpuVerification {
  std::string device, date, file;
};

// Points with backend "cuda" in RESULTS_DIR/<gpu>/*.json (an object with a "points" list), by
// "op/variant", the newest file winning. Unreadable files are skipped with a line in `warnings`.
std::map<std::string, GpuVerification> gpu_verifications(const std::string& results_dir,
                                                         std::vector<std::string>* warnings = nullptr);

// The committed results: <source dir>/bench/results.
std::string default_results_dir();

// One row per registered CUDA variant. `tallies` are the report's check results (those of
// backend "sim" count); `sim_absent` says why the simulator did not run (empty when it did);
// results files that could not be read are named in `notes`. With `sim`, each rung's default
// config is profiled on its op's profile cases, with DRAM bytes and time modelled for `gpu_id`.
std::vector<CudaVariantRow> cuda_variant_rows(const std::vector<CheckTally>& tallies, const std::string& sim_absent,
                                              const std::string& results_dir, std::vector<std::string>* notes = nullptr,
                                              Device* sim = nullptr, const std::string& gpu_id = "h200");

// "cols=1024,rows=1024 fp32: 4.0/32.0 sectors per global ld/st request, 31.0/0.0 bank conflicts per
// shared ld/st request, 32.0 active lanes ..., sectors 1.00x and DRAM 1.00x the fewest bytes (DRAM modelled for h200)".
std::string profile_line(const RungProfileSummary& p);

}  // namespace kl
