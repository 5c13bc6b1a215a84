// The CPU's side of the GPU's time: HTA's idle breakdown per stream, launch statistics and the
// synchronisation calls.
#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "trace/analysis.h"
#include "trace/intervals.h"

namespace kl::trace {

namespace {

bool is_call(HostKind k) { return k == HostKind::runtime || k == HostKind::driver; }

constexpr Ns kNotHostWait = std::numeric_limits<Ns>::min();

// Returns, per GPU op, the host-wait gap before it (kNotHostWait where the gap before it was not host wait).
std::vector<Ns> idle_breakdown(const TraceData& t, Report& r) {
  const GpuOps& g = t.gpu;
  const HostEvents& h = t.host;
  // HTA joins each op to the CPU event with its correlation (the last one, if several).
  std::unordered_map<int64_t, Ns> call_start;
  for (size_t i = 0; i < h.size(); ++i)
    if (is_call(h.kind[i]) && h.correlation[i] != -1) call_start[h.correlation[i]] = h.ts[i];
  std::map<std::pair<int64_t, int64_t>, std::vector<size_t>> by_stream;
  for (size_t i = 0; i < g.size(); ++i)
    if (g.stream[i] != -1) by_stream[{g.device[i], g.stream[i]}].push_back(i);
  const Ns threshold = static_cast<Ns>(std::llround(r.options.kernel_wait_us * 1000.0));
  std::vector<Ns> host_wait_before(g.size(), kNotHostWait);
  for (auto& [key, ops] : by_stream) {
    std::stable_sort(ops.begin(), ops.end(), [&](size_t a, size_t b) { return g.ts[a] < g.ts[b]; });
    StreamIdle s;
    s.device = key.first;
    s.stream = key.second;
    for (size_t k = 1; k < ops.size(); ++k) {
      const size_t prev = ops[k - 1], op = ops[k];
      const Ns prev_end = g.ts[prev] + g.dur[prev];
      const Ns gap = g.ts[op] - prev_end;
      auto call = g.correlation[op] >= 0 ? call_start.find(g.correlation[op]) : call_start.end();
      if (call != call_start.end() && call->second > prev_end) {
        s.host_wait = checked_add(s.host_wait, gap);
        ++s.host_wait_gaps;
        host_wait_before[op] = gap;
      } else if (gap < threshold) {
        s.kernel_wait = checked_add(s.kernel_wait, gap);  // negative for ops that overlap on a stream, as in HTA
        ++s.kernel_wait_gaps;
      } else {
        s.other = checked_add(s.other, gap);
        ++s.other_gaps;
      }
    }
    r.idle.push_back(s);
  }
  return host_wait_before;
}

void launch_stats(const TraceData& t, const std::vector<Ns>& host_wait_before, Report& r) {
  const GpuOps& g = t.gpu;
  const HostEvents& h = t.host;
  std::unordered_set<uint32_t> launch_names;
  // HTA's four, and the driver's launches (Triton kernels go through cuLaunchKernel) and ROCm's HIP names.
  for (const char* n : {"cudaLaunchKernel", "cudaLaunchKernelExC", "cudaMemcpyAsync", "cudaMemsetAsync", "cuLaunchKernel",
                        "cuLaunchKernelEx", "hipLaunchKernel", "hipExtLaunchKernel", "hipModuleLaunchKernel",
                        "hipExtModuleLaunchKernel", "hipMemcpyAsync", "hipMemsetAsync"})
    for (uint32_t id = 0; id < t.names.size(); ++id)
      if (t.names[id] == n) launch_names.insert(id);
  std::unordered_map<int64_t, size_t> launch;
  for (size_t i = 0; i < h.size(); ++i)
    if (is_call(h.kind[i]) && h.correlation[i] != -1 && launch_names.count(h.name[i])) launch[h.correlation[i]] = i;
  LaunchStats& L = r.launch;
  std::vector<Ns> delays;
  for (size_t i = 0; i < g.size(); ++i) {
    if (g.correlation[i] == -1 || g.stream[i] == -1) continue;  // HTA: ops on a stream
    auto it = launch.find(g.correlation[i]);
    if (it == launch.end()) continue;
    const size_t c = it->second;
    const Ns delay = std::max<Ns>(0, g.ts[i] - (h.ts[c] + h.dur[c]));
    delays.push_back(delay);
    L.max_delay = std::max(L.max_delay, delay);
    if (h.dur[c] > 50'000) ++L.runtime_over_50us;
    if (delay > 100'000) ++L.delay_over_100us;
    if (g.dur[i] < h.dur[c]) ++L.short_ops;
    if (g.kind[i] != OpKind::kernel) continue;
    ++L.kernels;
    if (g.dur[i] < h.dur[c]) {
      ++L.short_kernels;
      L.short_kernel_gpu = checked_add(L.short_kernel_gpu, g.dur[i]);
      L.short_kernel_cpu = checked_add(L.short_kernel_cpu, h.dur[c]);
      if (h.dur[c] > kSlowCallNs) {
        ++L.short_kernels_slow_launch;
        L.short_slow_launch_gpu = checked_add(L.short_slow_launch_gpu, g.dur[i]);
        L.short_slow_launch_cpu = checked_add(L.short_slow_launch_cpu, h.dur[c]);
      } else if (host_wait_before[i] != kNotHostWait) {
        ++L.short_kernels_waited;
        L.short_waited_gap = checked_add(L.short_waited_gap, host_wait_before[i]);
      }
    }
  }
  L.pairs = delays.size();
  if (delays.empty()) return;
  std::sort(delays.begin(), delays.end());
  L.median_delay = quantile_sorted(delays, 0.5);
  L.p90_delay = quantile_sorted(delays, 0.9);
}

void sync_calls(const TraceData& t, Report& r) {
  const HostEvents& h = t.host;
  std::unordered_map<uint32_t, std::string> wanted;
  for (uint32_t id = 0; id < t.names.size(); ++id) {
    const std::string& n = t.names[id];
    for (const char* sync : {"cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "hipDeviceSynchronize",
                             "hipStreamSynchronize", "hipEventSynchronize"})
      if (n == sync) wanted[id] = n;
  }
  for (size_t i = 0; i < h.size(); ++i) {
    if (h.kind[i] != HostKind::runtime) continue;
    auto it = wanted.find(h.name[i]);
    if (it == wanted.end()) continue;
    SyncCall& s = r.sync[it->second];
    ++s.calls;
    s.blocked = checked_add(s.blocked, h.dur[i]);
  }
}

}  // namespace

void analyze_host(const TraceData& t, Report& r) {
  launch_stats(t, idle_breakdown(t, r), r);
  sync_calls(t, r);
}

}  // namespace kl::trace
