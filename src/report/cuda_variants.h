// The report's "CUDA variants" section: each registered CUDA rung with whether it passes in the
// simulator, its static resources (build/cuda_static: cuobjdump of the built objects), and what a committed GPU results
// file (bench/results/<gpu>/*.json) says of it: "verified on <gpu> at <date> (<file>)" for a point (bench_variant times
// only a result that passed the reference check), "FAILED its check on <gpu> ..." when a row of the file's GPU check
// table failed, "checked on <gpu> ... not timed" for passed rows alone, or "not yet run on a GPU".
#pragma once
#include <map>
#include <string>
#include <vector>

#include "kernelab/harness.h"
#include "report/report.h"

namespace kl {

struct GpuVerification {
  std::string device, date, file;
  bool timed = false;        // the file holds a point of the variant
  int checks_passed = 0;     // rows of its GPU check table that passed ("checks", device_results.py)
  std::string failure;       // the first failed row ("fp16 FAIL k=10944,...: why"); empty when none
};

// Points with backend "cuda", and rows of `check --backend cuda` ("checks"), in
// RESULTS_DIR/<gpu>/*.json, by "op/variant", the newest file winning. Unreadable files are skipped
// with a line in `warnings`.
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
