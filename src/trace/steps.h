// Profiler steps: the ProfilerStep#N spans the PyTorch profiler records around each iteration, and
// `trace analyze --steps`, which keeps the events of some of them:
//   all       every event (kernelab's default)
//   complete  HTA's default (hta/common/trace.py, _filter_irrelevant_gpu_kernels with
//             include_last_profiler_step=False): host events that start before the last step
//             starts, and the GPU ops and stream events launched by them (matched by correlation);
//             every event when the trace has fewer than two steps
//   A-B       host events inside steps A to B (from A's start to B's end), and the GPU ops they launched
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "trace/analysis.h"
#include "trace/trace_data.h"

namespace kl::trace {

struct StepWindow {
  enum class Kind { all, complete, range } kind = Kind::all;
  int64_t first = 0, last = 0;  // range: step numbers, inclusive
};
StepWindow parse_steps(std::string_view text);  // BadInput naming the text

struct StepSelection {
  size_t steps_found = 0;  // distinct ProfilerStep#N in the trace
  bool filtered = false;
  std::string what;        // what was kept, in words
};
// Drops from t what the window leaves out; BadInput when a range names steps the trace lacks.
StepSelection select_steps(TraceData& t, const StepWindow& w);

// `--window TEXT`: host events inside the user annotations (record_function; NVTX ranges in
// `bench --trace`'s traces) whose name contains TEXT, and the GPU ops they launched: a warm-up or
// measured phase of a trace without profiler steps. BadInput listing the trace's annotations when
// none matches.
StepSelection select_window(TraceData& t, std::string_view text);

// One row per profiler step: its CPU span, and the GPU ops launched inside it (summed over devices):
// their count and time, their span and union, and the idle breakdown's gaps between them summed
// over streams (host wait, kernel wait, other: with several streams these exceed span - union).
struct StepRow {
  int64_t step = 0;
  Ns cpu_start = 0, cpu_dur = 0;
  uint64_t kernels = 0;
  Ns kernel_time = 0, gpu_span = 0, gpu_busy = 0, host_wait = 0, kernel_wait = 0, other_idle = 0;
};
struct StepTable {
  std::vector<StepRow> rows;  // by step number
  std::string slowest;        // the longest step against the median one, and where the extra time went
};
StepTable step_table(const TraceData& t, const AnalyzeOptions& opt);

}  // namespace kl::trace
