// `kernelab trace analyze`: what a PyTorch profiler trace says about the GPU's time. Every figure
// has one definition, stated next to its field; the ones HTA also computes follow HTA's source
// (hta/analyzers/breakdown_analysis.py, communication_analysis.py, cuda_kernel_analysis.py,
// holistictraceanalysis 0.5.0) so the two agree on the same trace.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/trace_data.h"

namespace kl::trace {

struct AnalyzeOptions {
  double kernel_wait_us = 30;  // HTA's consecutive_kernel_delay (its docstring says ns; it compares trace us)
  double gap_us = 100;         // a GPU gap longer than this is listed
  int gaps_listed = 10;        // the longest gaps, with the CPU activity meanwhile
  int chunks = 10;             // utilisation per chunk of each device's span (gpu_time_util)
};

// HTA's kernel types (hta/utils/utils.py get_kernel_type), from the name alone.
enum class KernelType { computation, communication, memory, other };
KernelType hta_kernel_type(std::string_view name);
const char* kernel_type_name(KernelType t);

// GPU ops = kernels, memcpy, memset. Span: first op start to last op end; busy: their union.
struct DeviceSummary {
  Ns first = 0, last = 0, busy = 0;
  uint64_t kernels = 0, memcpys = 0, memsets = 0;
  Ns kernel_time = 0, memcpy_time = 0, memset_time = 0;  // summed durations
  int64_t memcpy_bytes = 0, memset_bytes = 0;
  uint64_t pageable_memcpys = 0;  // memcpy named "... Pageable ...": host memory not pinned
  Ns pageable_memcpy_time = 0;
  Ns span() const { return last - first; }
  Ns idle() const { return span() - busy; }
};

struct KernelStats {
  std::string name;
  KernelType type = KernelType::computation;
  uint64_t count = 0;
  Ns total = 0, min = 0, max = 0;
  double mean = 0, median = 0, p90 = 0;  // ns; median and p90 interpolated (numpy "linear")
};

// HTA get_temporal_breakdown, per device. Its events are every "X" event with a CUDA stream
// (GPU ops and cuda_sync events such as "Stream Sync"), typed by name: idle = span - union,
// compute = union of computation-type events, non_compute = span - compute - idle. kernelab
// splits non_compute further: communication not under compute, memory not under either, other.
struct TemporalBreakdown {
  Ns span = 0, idle = 0, compute = 0, non_compute = 0, communication = 0, memory = 0, other = 0;
};

// HTA get_idle_time_breakdown, per (device, stream): kernels, memcpy and memset on the stream in
// start order; each op after the first contributes gap = start - previous op's end, as
//   host wait   if its launch call (matched by correlation) started after the previous op ended,
//   kernel wait else if gap < kernel_wait threshold,
//   other       else.
struct StreamIdle {
  int64_t device = 0, stream = 0;
  Ns host_wait = 0, kernel_wait = 0, other = 0;
  uint64_t host_wait_gaps = 0, kernel_wait_gaps = 0, other_gaps = 0;
  Ns total() const { return host_wait + kernel_wait + other; }
};

// HTA get_cuda_kernel_launch_stats: GPU ops matched by correlation to a cudaLaunchKernel,
// cudaLaunchKernelExC, cudaMemcpyAsync or cudaMemsetAsync call; delay = op start - call end,
// clipped at 0. Short kernels: kernels whose GPU time is shorter than their launch call;
// short_ops counts every matched op that way (HTA's "GPU events shorter than the CPU event").
struct LaunchStats {
  uint64_t pairs = 0;
  std::optional<double> median_delay, p90_delay;  // ns
  Ns max_delay = 0;
  uint64_t short_kernels = 0, kernels = 0, short_ops = 0;
  Ns short_kernel_gpu = 0, short_kernel_cpu = 0;
  uint64_t runtime_over_50us = 0, delay_over_100us = 0;  // HTA's outlier cut-offs
  // Of the short kernels, those whose launch call took over kSlowCallNs (a first launch loading its
  // module, or a full launch queue: neither is the launch overhead a CUDA Graph removes); counted
  // above as HTA counts them, left out of the finding.
  uint64_t short_kernels_slow_launch = 0;
  Ns short_slow_launch_gpu = 0, short_slow_launch_cpu = 0;
  // Of the other short kernels, those the GPU waited for: the gap before them on their stream is
  // host wait (their launch began after the previous op ended); the rest were queued behind earlier
  // work, their launch cost hidden. short_waited_gap sums those gaps: at most what a CUDA Graph could
  // win (a gap also holds whatever else the CPU did meanwhile).
  uint64_t short_kernels_waited = 0;
  Ns short_waited_gap = 0;
};

// A CUDA API call (runtime or driver) longer than this with no GPU op running meanwhile (under a
// tenth of the call covered, any device) was busy inside the driver, not waiting for the GPU: in
// practice a cost paid once per process (the context created by the first call, a kernel's module
// loaded at its first launch) or when the caching allocator grows or is emptied.
constexpr Ns kSlowCallNs = 1'000'000;
struct SlowCall {
  std::string name, why;  // why: what such a call does that long, from its name and place; may be empty
  Ns from_first_gpu_op = 0, dur = 0;
};
struct SlowCalls {
  uint64_t calls = 0;
  Ns total = 0;
  std::vector<SlowCall> longest;       // up to 3, longest first
  std::map<int64_t, Ns> idle_covered;  // per device: its idle time (inside its span) spent in these calls
};

struct SyncCall {
  uint64_t calls = 0;
  Ns blocked = 0;  // summed duration of the calls: the CPU waited that long
};

// HTA get_comm_comp_overlap, per device, over the temporal breakdown's events.
struct Overlap {
  Ns communication = 0, overlapped = 0;
  std::optional<double> ratio() const {
    if (communication == 0) return std::nullopt;
    return static_cast<double>(overlapped) / static_cast<double>(communication);
  }
};

struct CpuActivity {
  std::string name, cat;
  Ns overlap = 0, dur = 0;
};

struct Gap {
  int64_t device = 0;
  Ns start = 0, dur = 0;  // start from the device's first GPU op
  Ns cpu_busy = 0;        // part of the gap covered by any host event
  std::vector<CpuActivity> cpu;  // up to 3: those under half the gap or more, innermost (shortest) first; then most overlap
};

struct GapStats {
  uint64_t count = 0;
  Ns total = 0;
};

struct Finding {
  std::string kind, text;
  Ns impact = 0;  // the time at stake, for ranking
};

struct Report {
  std::string source;
  uint64_t events = 0, bytes = 0;
  std::map<std::string, uint64_t> categories;
  std::map<int64_t, std::string> device_names;
  AnalyzeOptions options;
  std::map<int64_t, DeviceSummary> devices;
  std::vector<KernelStats> kernels;  // every kernel name, by total time descending
  std::map<int64_t, TemporalBreakdown> temporal;
  std::vector<StreamIdle> idle;
  LaunchStats launch;
  std::map<std::string, SyncCall> sync;  // cudaDeviceSynchronize, cudaStreamSynchronize, cudaEventSynchronize
  std::map<int64_t, Overlap> overlap;
  std::map<int64_t, GapStats> gap_stats;
  std::vector<Gap> gaps;  // the longest, longest first
  std::map<int64_t, std::vector<double>> utilization;  // per device, per chunk: busy / chunk
  SlowCalls slow_calls;
  std::vector<Finding> findings;  // by impact, largest first
  uint64_t kernel_count() const;
  Ns kernel_time() const;
  bool gpu_activity() const { return !devices.empty(); }
};

Report analyze(const TraceData& t, const AnalyzeOptions& opt = {});

// Parts of analyze(), one file each.
std::string format_ns(double ns);  // "812 ns", "12.3 us", "4.56 ms", "1.23 s"
// s cut to at most max_bytes, with "..." in its last 3 bytes when cut, never inside a UTF-8
// character (a cut one would make the JSON report unprintable).
std::string shortened(std::string_view s, size_t max_bytes);
void summarize_gpu(const TraceData& t, Report& r);             // devices, kernels, temporal, overlap
void analyze_host(const TraceData& t, Report& r);              // idle breakdown, launch, sync
void analyze_gaps(const TraceData& t, Report& r);              // gaps, utilisation chunks, slow API calls
std::vector<Finding> make_findings(const Report& r);

}  // namespace kl::trace
