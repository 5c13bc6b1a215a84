// Memory from the profiler's "[memory]" events (profile_memory=True), per device:
//   peak allocated   the allocator's "Total Allocated" at its largest (PyTorch 1.10 on); in older
//                    traces, which carry only each event's Bytes, the running sum of Bytes from the
//                    trace's start (what was allocated during the profile, over what was held before)
//   peak reserved    "Total Reserved" at its largest, where the trace has it
//   when (from the trace's first event), and under which operators: the innermost cpu_op holding
//                    the peak's event, the outermost one, and the profiler step
//   live at the peak the allocations (by Addr) not yet freed at that instant, largest first; only
//                    where the events carry Addr
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "trace/trace_data.h"

namespace kl::trace {

struct Allocation {
  int64_t bytes = 0;
  Ns ts = 0;             // when it was allocated, from the trace's first event
  std::string op;        // "innermost < outermost < ProfilerStep#N" then, "" if none
};

struct DeviceMemory {
  std::string device;    // "cuda:0", "cpu"
  bool from_totals = false;  // the peak is the allocator's Total Allocated (else a running sum of Bytes)
  int64_t peak_allocated = 0;
  Ns peak_at = 0;  // from the trace's first event
  std::string peak_op;
  std::optional<int64_t> peak_reserved;
  uint64_t allocations = 0, frees = 0;
  std::optional<std::vector<Allocation>> live_at_peak;  // largest first, at most 10; none without Addr
  int64_t live_at_peak_bytes = 0;
};

std::vector<DeviceMemory> memory_peaks(const TraceData& t);

}  // namespace kl::trace
