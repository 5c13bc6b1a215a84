#include "trace/gpu_metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "trace/intervals.h"

namespace kl::trace {

namespace {
constexpr Ns kNone = std::numeric_limits<Ns>::max();

struct Range {
  Ns start, end;
};

bool is_step(std::string_view name) { return name.rfind("ProfilerStep#", 0) == 0; }

// event_parser.py's steps: host spans (or, without ProfilerStep, the operators' span), stretched to
// the device ops each launched, tail steps dropped.
std::vector<Range> plugin_steps(const TraceData& t, std::string& source) {
  const HostEvents& h = t.host;
  std::vector<Range> steps;
  Ns cpu_min = kNone, cpu_max = std::numeric_limits<Ns>::min();
  for (size_t i = 0; i < h.size(); ++i) {
    const bool step = is_step(t.names[h.name[i]]);
    if (h.kind[i] == HostKind::cpu_op || step) cpu_min = std::min(cpu_min, h.ts[i]), cpu_max = std::max(cpu_max, h.ts[i] + h.dur[i]);
    if (step) steps.push_back({h.ts[i], h.ts[i] + h.dur[i]});
  }
  std::sort(steps.begin(), steps.end(), [](const Range& a, const Range& b) { return a.start < b.start; });
  const bool found = !steps.empty();
  if (!found) {
    if (cpu_min == kNone) return {};
    steps.push_back({cpu_min, cpu_max});
  }
  // Device ops per correlation, and the runtime calls in start order.
  std::unordered_multimap<int64_t, size_t> ops;
  for (size_t i = 0; i < t.gpu.size(); ++i)
    if (t.gpu.correlation[i] >= 0) ops.emplace(t.gpu.correlation[i], i);
  std::vector<size_t> calls;
  for (size_t i = 0; i < h.size(); ++i)
    if (h.kind[i] == HostKind::runtime || h.kind[i] == HostKind::driver) calls.push_back(i);
  std::sort(calls.begin(), calls.end(), [&](size_t a, size_t b) { return h.ts[a] < h.ts[b]; });
  std::vector<Range> device(steps.size(), Range{kNone, std::numeric_limits<Ns>::min()});
  std::vector<uint64_t> matched(steps.size(), 0);
  std::vector<bool> launched_in_step(t.gpu.size(), false);
  size_t s = 0;
  for (size_t c : calls) {  // a call counts for the step that holds it whole
    while (s < steps.size() && h.ts[c] >= steps[s].end) ++s;
    if (s == steps.size()) break;
    if (h.ts[c] < steps[s].start || h.ts[c] + h.dur[c] > steps[s].end) continue;
    auto [first, last] = ops.equal_range(h.correlation[c]);
    for (auto it = first; it != last; ++it) {
      const size_t op = it->second;
      device[s].start = std::min(device[s].start, t.gpu.ts[op]);
      device[s].end = std::max(device[s].end, t.gpu.ts[op] + t.gpu.dur[op]);
      ++matched[s], launched_in_step[op] = true;
    }
  }
  const bool any = std::any_of(matched.begin(), matched.end(), [](uint64_t m) { return m > 0; });
  if (any) {
    Ns prev_end = steps[0].start;
    if (device[0].start != kNone)  // ops launched outside the steps that end before step 0's first op
      for (size_t i = 0; i < t.gpu.size(); ++i)
        if (!launched_in_step[i] && t.gpu.ts[i] + t.gpu.dur[i] < device[0].start) prev_end = std::max(prev_end, t.gpu.ts[i] + t.gpu.dur[i]);
    for (size_t i = 0; i < steps.size(); ++i) {
      const Ns start = std::max(prev_end, steps[i].start);
      const Ns end = device[i].start == kNone ? std::max(steps[i].end, start) : std::max({steps[i].end, device[i].end, start});
      steps[i] = {start, end}, prev_end = end;
    }
    if (steps.size() > 1) {
      size_t i = steps.size() - 1;
      while (i > 0 && matched[i] == 0) --i;
      size_t keep = i + 1;
      if (i > 0 && double(matched[i - 1]) * 0.8 > double(matched[i])) keep = i;
      steps.resize(keep);
    }
  }
  source = found ? fmt::format("the profiler steps' span ({} step{}, stretched to the GPU ops each launched{})", steps.size(),
                               steps.size() == 1 ? "" : "s", any ? "" : "; none launched any")
                 : fmt::format("no ProfilerStep: the operators' span, stretched to the GPU ops launched in it");
  return steps;
}

// The sum of `value` over overlapping intervals, capped at 1, as (start, end, value) pieces.
struct Piece {
  Ns start, end;
  double value;
};
std::vector<Piece> stacked(std::vector<Piece> in) {
  struct Edge {
    Ns at;
    bool start;
    double value;
  };
  std::vector<Edge> edges;
  for (const Piece& p : in) edges.push_back({p.start, true, p.value}), edges.push_back({p.end, false, p.value});
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) { return a.at != b.at ? a.at < b.at : a.start > b.start; });
  std::vector<Piece> out;
  double level = 0;
  for (size_t i = 0; i < edges.size(); ++i) {
    if (i > 0 && edges[i].at > edges[i - 1].at && level > 0) out.push_back({edges[i - 1].at, edges[i].at, std::min(level, 1.0)});
    level += edges[i].start ? edges[i].value : -edges[i].value;
  }
  return out;
}

Ns overlap(Ns a0, Ns a1, Ns b0, Ns b1) { return std::max<Ns>(0, std::min(a1, b1) - std::max(a0, b0)); }
}  // namespace

GpuMetrics gpu_metrics(const TraceData& t) {
  GpuMetrics m;
  const std::vector<Range> steps = plugin_steps(t, m.range_source);
  if (steps.empty()) return m;
  m.range_start = steps.front().start, m.range_end = steps.back().end;
  const Ns range = m.range_end - m.range_start;
  // The timeline's span: the profiler's own, else every event's.
  Ns g0 = t.profiler_start, g1 = t.profiler_end;
  if (g1 <= g0) {
    g0 = kNone, g1 = std::numeric_limits<Ns>::min();
    for (size_t i = 0; i < t.gpu.size(); ++i) g0 = std::min(g0, t.gpu.ts[i]), g1 = std::max(g1, t.gpu.ts[i] + t.gpu.dur[i]);
    for (size_t i = 0; i < t.host.size(); ++i) g0 = std::min(g0, t.host.ts[i]), g1 = std::max(g1, t.host.ts[i] + t.host.dur[i]);
  }
  m.bucket = 1000;  // 1 us, times 10 until at most 100 buckets
  while ((g1 - g0) / m.bucket > 100) m.bucket *= 10;
  const int64_t buckets = std::max<int64_t>(1, (g1 - g0) / m.bucket);

  std::map<int64_t, std::vector<Piece>> blocks, occupancy;
  std::map<int64_t, std::vector<Interval>> busy;
  for (size_t i = 0; i < t.gpu.size(); ++i) {
    if (t.gpu.kind[i] != OpKind::kernel) continue;
    const int64_t dev = t.gpu.device[i];
    const Ns a = t.gpu.ts[i], b = a + t.gpu.dur[i];
    DeviceGpuMetrics& d = m.devices[dev];
    ++d.kernels;
    // As the plugin: only positive blocks per SM and non-negative occupancies are kept.
    const float bps = t.gpu.blocks_per_sm[i], occ = t.gpu.occupancy_pct[i];
    if (bps > 0) blocks[dev].push_back({a, b, double(bps)}), ++d.with_blocks_per_sm;
    if (occ >= 0) occupancy[dev].push_back({a, b, double(occ)}), ++d.with_occupancy;
    busy[dev].push_back({a, b});
  }
  for (auto& [dev, d] : m.devices) {
    const std::vector<Interval> merged = merge_intervals(busy[dev]);
    Ns in_range = 0;
    for (const Interval& iv : merged) in_range += overlap(iv.start, iv.end, m.range_start, m.range_end);
    d.utilization = range > 0 ? double(in_range) / double(range) : 0;
    // Both over the range only: none when no kernel with the field runs inside it.
    double weighted = 0;
    bool inside = false;
    for (const Piece& p : stacked(blocks[dev])) {
      const Ns in = overlap(p.start, p.end, m.range_start, m.range_end);
      weighted += p.value * double(in), inside = inside || in > 0;
    }
    if (inside) d.sm_efficiency = weighted / double(range);
    double occ_weighted = 0, occ_time = 0;
    for (const Piece& p : occupancy[dev]) {
      const double in = double(overlap(p.start, p.end, m.range_start, m.range_end));
      occ_weighted += p.value * in, occ_time += in;
    }
    if (occ_time > 0) d.achieved_occupancy_pct = occ_weighted / occ_time;
    for (int64_t b = 0; b < buckets; ++b) {
      const Ns b0 = g0 + b * m.bucket, b1 = b + 1 < buckets ? b0 + m.bucket : g1;
      Ns covered = 0;
      for (const Interval& iv : merged) covered += overlap(iv.start, iv.end, b0, b1);
      d.timeline.push_back({b0, b1 > b0 ? double(covered) / double(b1 - b0) : 0.0});
    }
  }
  return m;
}

}  // namespace kl::trace
