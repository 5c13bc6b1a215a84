// The GPU side: per-device summary, kernel breakdown, HTA's temporal breakdown and
// communication/computation overlap. Also analyze() itself.
#include <algorithm>
#include <unordered_map>

#include "trace/analysis.h"
#include "trace/intervals.h"

namespace kl::trace {

// HTA's regular expressions, matched with Python's re.match (anchored at the start; '.' stops at
// a newline): communication ^nccl.*Kernel; memory ^Memcpy|^Memset|^dma; computation: none of
// (^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync); the rest is other.
KernelType hta_kernel_type(std::string_view name) {
  const std::string_view line = name.substr(0, name.find('\n'));
  const bool comm = line.starts_with("nccl") && line.find("Kernel", 4) != std::string_view::npos;
  if (comm) return KernelType::communication;
  if (name.starts_with("Memcpy") || name.starts_with("Memset") || name.starts_with("dma")) return KernelType::memory;
  const bool not_compute = line.find("Memcpy") != std::string_view::npos || line.find("Sync") != std::string_view::npos;
  return not_compute ? KernelType::other : KernelType::computation;
}

const char* kernel_type_name(KernelType t) {
  switch (t) {
    case KernelType::computation: return "computation";
    case KernelType::communication: return "communication";
    case KernelType::memory: return "memory";
    case KernelType::other: return "other";
  }
  return "other";
}

uint64_t Report::kernel_count() const {
  uint64_t n = 0;
  for (const auto& [id, d] : devices) n += d.kernels;
  return n;
}

Ns Report::kernel_time() const {
  Ns n = 0;
  for (const auto& [id, d] : devices) n = checked_add(n, d.kernel_time);
  return n;
}

namespace {

void device_summaries(const TraceData& t, Report& r) {
  const GpuOps& g = t.gpu;
  std::map<int64_t, std::vector<Interval>> ops;
  for (size_t i = 0; i < g.size(); ++i) {
    DeviceSummary& d = r.devices[g.device[i]];
    std::vector<Interval>& v = ops[g.device[i]];
    const Ns end = g.ts[i] + g.dur[i];
    d.first = v.empty() ? g.ts[i] : std::min(d.first, g.ts[i]);
    d.last = v.empty() ? end : std::max(d.last, end);
    v.push_back({g.ts[i], end});
    switch (g.kind[i]) {
      case OpKind::kernel: ++d.kernels, d.kernel_time = checked_add(d.kernel_time, g.dur[i]); break;
      case OpKind::memcpy:
        ++d.memcpys, d.memcpy_time = checked_add(d.memcpy_time, g.dur[i]), d.memcpy_bytes = checked_add(d.memcpy_bytes, g.bytes[i]);
        if (t.names[g.name[i]].find("Pageable") != std::string::npos)
          ++d.pageable_memcpys, d.pageable_memcpy_time = checked_add(d.pageable_memcpy_time, g.dur[i]);
        break;
      case OpKind::memset: ++d.memsets, d.memset_time = checked_add(d.memset_time, g.dur[i]), d.memset_bytes = checked_add(d.memset_bytes, g.bytes[i]); break;
    }
  }
  for (auto& [dev, v] : ops) r.devices[dev].busy = union_length(std::move(v));
}

void kernel_breakdown(const TraceData& t, Report& r) {
  const GpuOps& g = t.gpu;
  std::unordered_map<uint32_t, std::vector<Ns>> durs;
  for (size_t i = 0; i < g.size(); ++i)
    if (g.kind[i] == OpKind::kernel) durs[g.name[i]].push_back(g.dur[i]);
  for (auto& [name, d] : durs) {
    std::sort(d.begin(), d.end());
    KernelStats k;
    k.name = t.names[name];
    k.type = hta_kernel_type(k.name);
    k.count = d.size();
    for (Ns x : d) k.total = checked_add(k.total, x);
    k.min = d.front();
    k.max = d.back();
    k.mean = static_cast<double>(k.total) / static_cast<double>(k.count);
    k.median = quantile_sorted(d, 0.5);
    k.p90 = quantile_sorted(d, 0.9);
    r.kernels.push_back(std::move(k));
  }
  std::sort(r.kernels.begin(), r.kernels.end(), [](const KernelStats& a, const KernelStats& b) {
    return a.total != b.total ? a.total > b.total : a.name < b.name;
  });
}

// The events HTA's temporal breakdown and overlap read, per device and kernel type.
struct TypedIntervals {
  std::vector<Interval> by_type[4];
};

std::map<int64_t, TypedIntervals> stream_intervals(const TraceData& t) {
  std::map<int64_t, TypedIntervals> out;
  std::unordered_map<uint32_t, KernelType> type_of;
  auto type = [&](uint32_t name) {
    auto it = type_of.find(name);
    if (it == type_of.end()) it = type_of.emplace(name, hta_kernel_type(t.names[name])).first;
    return static_cast<int>(it->second);
  };
  auto add = [&](const StreamColumns& c, size_t i) {
    out[c.device[i]].by_type[type(c.name[i])].push_back({c.ts[i], c.ts[i] + c.dur[i]});
  };
  for (size_t i = 0; i < t.gpu.size(); ++i)
    if (t.gpu.stream[i] != -1) add(t.gpu, i);
  for (size_t i = 0; i < t.stream_events.size(); ++i) add(t.stream_events, i);
  return out;
}

void temporal_and_overlap(const TraceData& t, Report& r) {
  for (auto& [dev, ti] : stream_intervals(t)) {
    const auto& comp = ti.by_type[static_cast<int>(KernelType::computation)];
    const auto& comm = ti.by_type[static_cast<int>(KernelType::communication)];
    const auto& mem = ti.by_type[static_cast<int>(KernelType::memory)];
    std::vector<Interval> all;
    for (const auto& v : ti.by_type) all.insert(all.end(), v.begin(), v.end());
    const std::vector<Interval> merged = merge_intervals(all);
    TemporalBreakdown& tb = r.temporal[dev];
    tb.span = merged.empty() ? 0 : std::max_element(merged.begin(), merged.end(), [](auto& a, auto& b) { return a.end < b.end; })->end -
                                       merged.front().start;
    tb.idle = tb.span - covered(merged);
    tb.compute = union_length(comp);
    tb.non_compute = tb.span - tb.compute - tb.idle;
    std::vector<Interval> acc = comp;
    acc.insert(acc.end(), comm.begin(), comm.end());
    const Ns comp_comm = union_length(acc);
    tb.communication = comp_comm - tb.compute;
    acc.insert(acc.end(), mem.begin(), mem.end());
    tb.memory = union_length(acc) - comp_comm;
    tb.other = tb.non_compute - tb.communication - tb.memory;  // other-type events ("Stream Sync"...)

    Overlap& o = r.overlap[dev];
    o.communication = union_length(comm);
    o.overlapped = o.communication + tb.compute - comp_comm;
  }
}

}  // namespace

void summarize_gpu(const TraceData& t, Report& r) {
  device_summaries(t, r);
  kernel_breakdown(t, r);
  temporal_and_overlap(t, r);
}

Report analyze(const TraceData& t, const AnalyzeOptions& opt) {
  Report r;
  r.source = t.source;
  r.events = t.events;
  r.bytes = t.bytes;
  r.categories = t.categories;
  r.device_names = t.device_names;
  r.options = opt;
  summarize_gpu(t, r);
  analyze_host(t, r);
  analyze_gaps(t, r);
  r.findings = make_findings(r);
  return r;
}

}  // namespace kl::trace
