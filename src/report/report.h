// The report: index.html (inline SVG roofline of the measured points, the ladder tables),
// report.md and results.json, all from the same points.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernelab/harness.h"

namespace kl {

// One roof a point is placed under: a device's ceilings for a dtype, with their sources.
struct Roof {
  std::string device, backend, dtype;
  double peak_flops = 0, bandwidth = 0;
  std::string flops_source, bandwidth_source;
};

// A CUDA rung run once on the simulator's profiling build at one of its op's profile cases:
// ncu-style counts (sectors and bank conflicts per request, active lanes) and the modelled DRAM
// bytes over the op's fewest (sim/device/sim_profile.h).
struct RungProfileSummary {
  std::string problem, config;
  double ld_sectors_per_request = 0, st_sectors_per_request = 0;
  double ld_conflicts_per_request = 0, st_conflicts_per_request = 0;  // shared memory
  double active_lanes = 0;      // per global or shared memory instruction
  bool shared = false;          // any shared-memory request (else the conflicts say nothing)
  double sectors_over_min = 0;  // global sectors' bytes over the op's fewest bytes
  double dram_over_min = 0;     // modelled
  double modelled_time_s = 0;   // modelled, the busiest unit at its peak
  std::string bound, gpu;       // the model's busiest unit and the GPU it models
  double sampled_scale = 1;     // > 1: the first blocks counted and scaled
  std::string failure;          // the profiled run's check, when it failed
};

// One CUDA rung in the report: simulator result, static resources, GPU verification.
struct CudaVariantRow {
  std::string op, variant, source;
  std::string simulator;  // "passes in the simulator (24 of 24 checks)", "FAILED ...", "not run ..."
  bool sim_passed = false;
  std::string resources;      // "sm_90a: 28 registers, 4096 B smem, no spills" or why not known
  nlohmann::json static_info;  // variant_static_json: registers, smem_bytes, spill_bytes, kernels, ...
  bool gpu_verified = false;
  std::string gpu_device, gpu_date, gpu_file;  // set when a results file names the variant
  std::string gpu;  // "verified on <gpu> at <date> (<file>)", "FAILED its check on ...", "checked on ...", or "not yet run on a GPU"
  std::vector<RungProfileSummary> profiles;  // one per profile case of its op
  std::string memory;  // the profiles in one line, or why there are none
};

struct ReportData {
  std::string generated_at, commit, host;
  std::vector<Point> points;
  std::vector<Roof> roofs;
  std::vector<std::string> absent_backends;  // "cuda: no CUDA device found ..."
  std::vector<std::string> check_summary;    // one line per op: "gemm: 312/312 cases passed"
  std::vector<CudaVariantRow> cuda_variants;  // every registered CUDA rung (report/cuda_variants.h)
  std::vector<std::string> cuda_notes;        // unreadable results files, missing static facts
};

nlohmann::json point_to_json(const Point& p);  // the design's keys plus the extras
nlohmann::json report_to_json(const ReportData& r);
// Writes DIR/index.html, DIR/report.md, DIR/results.json; RuntimeFailure if DIR is not writable.
void write_report(const ReportData& r, const std::string& dir);

}  // namespace kl
