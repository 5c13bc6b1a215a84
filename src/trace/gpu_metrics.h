// The TensorBoard PyTorch profiler plugin's GPU metrics, with its definitions (pytorch/kineto,
// tb_plugin/torch_tb_profiler/profiler/gpu_metrics_parser.py and event_parser.py as of commit
// ce32f50e~1, the plugin's last version before its removal; its tests' figures are ctest's):
//   range            the profiler steps' span: each ProfilerStep#N (without steps, the operators' span)
//                    stretched to the end of the GPU ops its runtime calls launched and started no
//                    earlier than the previous step's end; trailing steps that launched nothing
//                    dropped, and the last one too when it launched under 80% of the ops of the one before
//   utilization      per device (args.device): the union of kernel intervals inside the range / range
//   est. SM efficiency  at each instant the sum over running kernels of "blocks per SM" (positive
//                    values only), capped at 1, summed over the range / range
//   est. achieved occupancy  kernels' "est. achieved occupancy %" weighted by their time inside the range
// A device with no kernel carrying the field inside the range gets no value (nullopt), not a 0.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "trace/trace_data.h"

namespace kl::trace {

struct DeviceGpuMetrics {
  double utilization = 0;
  std::optional<double> sm_efficiency, achieved_occupancy_pct;
  uint64_t kernels = 0, with_blocks_per_sm = 0, with_occupancy = 0;
  // Utilization per bucket of the timeline (the profiler's own span, else every event's): buckets a
  // power of 10 us wide, at most 100, the last one longer; each (bucket start, busy fraction).
  std::vector<std::pair<Ns, double>> timeline;
};

struct GpuMetrics {
  Ns range_start = 0, range_end = 0;
  std::string range_source;  // how the range was found, in words
  Ns bucket = 0;             // the timeline's bucket width
  std::map<int64_t, DeviceGpuMetrics> devices;
};

GpuMetrics gpu_metrics(const TraceData& t);

}  // namespace kl::trace
