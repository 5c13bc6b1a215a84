// The JSON of `trace analyze --json` and `trace diff --json`. Keys others rely on (never renamed):
// kernel_count, kernel_time_us, devices (id -> busy_us, span_us, idle_us), top_kernels (name,
// count, total_us), median_launch_delay_us, idle_breakdown, temporal_breakdown, overlap, findings.
// Times are microseconds (the trace's unit), from exact nanosecond sums.
#pragma once
#include <nlohmann/json.hpp>

#include "trace/analysis.h"
#include "trace/diff.h"

namespace kl::trace {

nlohmann::json report_json(const Report& r, int top_kernels);  // top_kernels <= 0: all
nlohmann::json diff_json(const TraceDiff& d, int top_kernels);

}  // namespace kl::trace
