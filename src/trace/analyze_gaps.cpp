// Where the GPU stood still: gaps in each device's busy time longer than a threshold, with what
// the CPU was doing meanwhile (Nsight Systems' gpu_gaps), and utilisation per chunk of the span
// (gpu_time_util); and the CUDA API calls that kept the CPU inside the driver while the GPU had
// nothing to do (start-up and allocation costs).
#include <algorithm>
#include <cmath>

#include "trace/analysis.h"
#include "trace/intervals.h"

namespace kl::trace {

namespace {

const char* host_cat(HostKind k) {
  switch (k) {
    case HostKind::cpu_op: return "cpu_op";
    case HostKind::user_annotation: return "user_annotation";
    case HostKind::runtime: return "cuda_runtime";
    case HostKind::driver: return "cuda_driver";
  }
  return "";
}

std::map<int64_t, std::vector<Interval>> busy_per_device(const GpuOps& g) {
  std::map<int64_t, std::vector<Interval>> v;
  for (size_t i = 0; i < g.size(); ++i) v[g.device[i]].push_back({g.ts[i], g.ts[i] + g.dur[i]});
  for (auto& [dev, iv] : v) iv = merge_intervals(std::move(iv));
  return v;
}

// The host events overlapping [gap.start, gap.start + dur) in absolute time a..b.
void cpu_during(const TraceData& t, const std::vector<size_t>& by_start, Ns a, Ns b, Gap& gap) {
  const HostEvents& h = t.host;
  auto last = std::lower_bound(by_start.begin(), by_start.end(), b, [&](size_t i, Ns x) { return h.ts[i] < x; });
  std::vector<Interval> busy;
  std::vector<CpuActivity> acts;
  for (auto it = by_start.begin(); it != last; ++it) {
    const size_t i = *it;
    const Ns lo = std::max(a, h.ts[i]), hi = std::min(b, h.ts[i] + h.dur[i]);
    if (hi <= lo) continue;
    busy.push_back({lo, hi});
    acts.push_back({t.names[h.name[i]], host_cat(h.kind[i]), hi - lo, h.dur[i]});
  }
  gap.cpu_busy = union_length(std::move(busy));
  const size_t keep = std::min<size_t>(3, acts.size());
  // The innermost event under half the gap or more names what the CPU did (ProfilerStep#N covers every gap).
  const auto major = [&](const CpuActivity& x) { return x.overlap >= (b - a) - (b - a) / 2; };
  std::partial_sort(acts.begin(), acts.begin() + static_cast<std::ptrdiff_t>(keep), acts.end(), [&](const CpuActivity& x, const CpuActivity& y) {
    if (major(x) != major(y)) return major(x);
    if (major(x) && x.dur != y.dur) return x.dur < y.dur;
    if (x.overlap != y.overlap) return x.overlap > y.overlap;
    if (x.dur != y.dur) return x.dur < y.dur;
    return x.name < y.name;
  });
  acts.resize(keep);
  gap.cpu = std::move(acts);
}

bool has(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// What a CUDA call does for milliseconds with the GPU idle, from its name and place.
std::string slow_call_why(std::string_view name, bool first_call) {
  if (first_call) return "the trace's first CUDA call: a process's first creates its context";
  if (has(name, "LaunchKernel")) return "a launch with the GPU idle: a kernel's first launch loads its module";
  if (has(name, "Malloc") || has(name, "Free") || has(name, "MemAlloc") || has(name, "HostAlloc"))
    return "memory allocated or released: the caching allocator's pool grown or emptied";
  return "";
}

// kSlowCallNs's calls, and how much of each device's idle time they fill.
void slow_api_calls(const TraceData& t, const std::map<int64_t, std::vector<Interval>>& busy, Report& r) {
  const HostEvents& h = t.host;
  std::vector<size_t> calls;
  for (size_t i = 0; i < h.size(); ++i)
    if (h.kind[i] == HostKind::runtime || h.kind[i] == HostKind::driver) calls.push_back(i);
  if (calls.empty() || t.gpu.size() == 0) return;
  std::stable_sort(calls.begin(), calls.end(), [&](size_t a, size_t b) { return h.ts[a] < h.ts[b]; });
  std::vector<Interval> any_gpu;
  for (const auto& [dev, merged] : busy) any_gpu.insert(any_gpu.end(), merged.begin(), merged.end());
  any_gpu = merge_intervals(std::move(any_gpu));
  const Ns first_gpu_op = any_gpu.front().start;
  SlowCalls& s = r.slow_calls;
  std::vector<Interval> slow;
  size_t from = 0;
  for (size_t i : calls) {
    if (h.dur[i] <= kSlowCallNs) continue;
    const Ns end = h.ts[i] + h.dur[i];
    if (covered_within(any_gpu, h.ts[i], end, from) >= h.dur[i] / 10) continue;
    ++s.calls;
    s.total = checked_add(s.total, h.dur[i]);
    slow.push_back({h.ts[i], end});
    const std::string& name = t.names[h.name[i]];
    s.longest.push_back({name, slow_call_why(name, h.ts[i] == t.first_api_call), h.ts[i] - first_gpu_op, h.dur[i]});
  }
  std::stable_sort(s.longest.begin(), s.longest.end(), [](const SlowCall& a, const SlowCall& b) { return a.dur > b.dur; });
  if (s.longest.size() > 3) s.longest.resize(3);
  if (slow.empty()) return;
  slow = merge_intervals(std::move(slow));
  for (const auto& [dev, merged] : busy) {
    size_t in_span = 0, in_busy = 0;
    Ns covered_busy = 0;
    for (const Interval& b : merged) covered_busy += covered_within(slow, b.start, b.end, in_busy);
    s.idle_covered[dev] = covered_within(slow, merged.front().start, merged.back().end, in_span) - covered_busy;
  }
}

}  // namespace

void analyze_gaps(const TraceData& t, Report& r) {
  const Ns threshold = static_cast<Ns>(std::llround(r.options.gap_us * 1000.0));
  const std::map<int64_t, std::vector<Interval>> busy = busy_per_device(t.gpu);
  slow_api_calls(t, busy, r);
  std::vector<Gap> gaps;
  for (const auto& [dev, merged] : busy) {
    const Ns first = merged.front().start;
    GapStats& st = r.gap_stats[dev];
    for (size_t i = 1; i < merged.size(); ++i) {
      const Ns len = merged[i].start - merged[i - 1].end;
      if (len <= threshold) continue;
      ++st.count;
      st.total += len;
      gaps.push_back({dev, merged[i - 1].end - first, len, 0, {}});
    }
    // Utilisation per chunk: chunk k is [first + span*k/n, first + span*(k+1)/n).
    const Ns span = r.devices.at(dev).span();
    const int n = r.options.chunks;
    if (span <= 0 || n <= 0) continue;
    std::vector<double>& util = r.utilization[dev];
    size_t from = 0;
    for (int k = 0; k < n; ++k) {
      const Ns a = first + static_cast<Ns>(static_cast<__int128>(span) * k / n);
      const Ns b = first + static_cast<Ns>(static_cast<__int128>(span) * (k + 1) / n);
      util.push_back(b > a ? static_cast<double>(covered_within(merged, a, b, from)) / static_cast<double>(b - a) : 0.0);
    }
  }
  std::stable_sort(gaps.begin(), gaps.end(), [](const Gap& a, const Gap& b) { return a.dur > b.dur; });
  if (gaps.size() > static_cast<size_t>(std::max(0, r.options.gaps_listed))) gaps.resize(static_cast<size_t>(std::max(0, r.options.gaps_listed)));
  std::vector<size_t> by_start(t.host.size());
  for (size_t i = 0; i < by_start.size(); ++i) by_start[i] = i;
  std::stable_sort(by_start.begin(), by_start.end(), [&](size_t a, size_t b) { return t.host.ts[a] < t.host.ts[b]; });
  for (Gap& g : gaps) {
    const Ns a = r.devices.at(g.device).first + g.start;
    cpu_during(t, by_start, a, a + g.dur, g);
  }
  r.gaps = std::move(gaps);
}

}  // namespace kl::trace
