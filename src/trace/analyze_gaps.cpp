// Where the GPU stood still: gaps in each device's busy time longer than a threshold, with what
// the CPU was doing meanwhile (Nsight Systems' gpu_gaps), and utilisation per chunk of the span
// (gpu_time_util).
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
  std::partial_sort(acts.begin(), acts.begin() + static_cast<std::ptrdiff_t>(keep), acts.end(), [](const CpuActivity& x, const CpuActivity& y) {
    if (x.overlap != y.overlap) return x.overlap > y.overlap;
    if (x.dur != y.dur) return x.dur < y.dur;
    return x.name < y.name;
  });
  acts.resize(keep);
  gap.cpu = std::move(acts);
}

}  // namespace

void analyze_gaps(const TraceData& t, Report& r) {
  const Ns threshold = static_cast<Ns>(std::llround(r.options.gap_us * 1000.0));
  std::vector<Gap> gaps;
  for (const auto& [dev, merged] : busy_per_device(t.gpu)) {
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
