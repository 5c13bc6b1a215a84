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

struct ReportData {
  std::string generated_at, commit, host;
  std::vector<Point> points;
  std::vector<Roof> roofs;
  std::vector<std::string> absent_backends;  // "cuda: no CUDA device found ..."
  std::vector<std::string> check_summary;    // one line per op: "gemm: 312/312 cases passed"
};

nlohmann::json point_to_json(const Point& p);  // the design's keys plus the extras
nlohmann::json report_to_json(const ReportData& r);
// Writes DIR/index.html, DIR/report.md, DIR/results.json; RuntimeFailure if DIR is not writable.
void write_report(const ReportData& r, const std::string& dir);

}  // namespace kl
