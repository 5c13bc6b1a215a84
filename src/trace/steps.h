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

}  // namespace kl::trace
