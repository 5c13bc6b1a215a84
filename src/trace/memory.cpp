#include "trace/memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>

namespace kl::trace {

namespace {
std::string device_name(int64_t type, int64_t id) {
  if (type == 1) return fmt::format("cuda:{}", id);
  if (type == 0) return "cpu";
  return fmt::format("device type {} id {}", type, id);
}

// The cpu_ops and user annotations holding ts, from those sorted by start.
class OpAt {
 public:
  explicit OpAt(const TraceData& t) : t_(t) {
    for (size_t i = 0; i < t.host.size(); ++i)
      if (t.host.kind[i] == HostKind::cpu_op || t.host.kind[i] == HostKind::user_annotation) ops_.push_back(i);
    std::sort(ops_.begin(), ops_.end(), [&](size_t a, size_t b) { return t.host.ts[a] < t.host.ts[b]; });
  }
  // "innermost < outermost < ProfilerStep#N" of the cpu_ops holding ts, the parts that exist.
  std::string operator()(Ns ts) const {
    const HostEvents& h = t_.host;
    const auto end = std::upper_bound(ops_.begin(), ops_.end(), ts, [&](Ns v, size_t i) { return v < h.ts[i]; });
    std::optional<size_t> inner, outer, step;
    for (auto it = ops_.begin(); it != end; ++it) {
      if (h.ts[*it] + h.dur[*it] < ts) continue;
      if (t_.names[h.name[*it]].rfind("ProfilerStep#", 0) == 0) {
        step = *it;
        continue;
      }
      if (!inner || h.dur[*it] < h.dur[*inner]) inner = *it;
      if (!outer || h.dur[*it] > h.dur[*outer]) outer = *it;
    }
    std::string path;
    for (const auto& part : {inner, outer != inner ? outer : std::nullopt, step})
      if (part) path += (path.empty() ? "" : " < ") + t_.names[h.name[*part]];
    return path;
  }

 private:
  const TraceData& t_;
  std::vector<size_t> ops_;
};
}  // namespace

std::vector<DeviceMemory> memory_peaks(const TraceData& t) {
  const MemoryEvents& m = t.memory;
  std::vector<size_t> order(m.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return m.ts[a] < m.ts[b]; });
  std::map<std::pair<int64_t, int64_t>, std::vector<size_t>> by_device;
  for (size_t i : order) by_device[{m.device_type[i], m.device_id[i]}].push_back(i);
  const OpAt op_at(t);
  Ns start = m.size() ? m.ts[order.front()] : 0;  // the trace's first event
  for (Ns ts : t.host.ts) start = std::min(start, ts);
  for (Ns ts : t.gpu.ts) start = std::min(start, ts);
  std::vector<DeviceMemory> out;
  for (const auto& [key, events] : by_device) {
    DeviceMemory d;
    d.device = device_name(key.first, key.second);
    d.from_totals = std::all_of(events.begin(), events.end(), [&](size_t i) { return m.total_allocated[i] >= 0; });
    const bool with_addr = std::all_of(events.begin(), events.end(), [&](size_t i) { return m.addr[i] >= 0; });
    int64_t running = 0;
    size_t peak_event = events.front(), peak_index = 0;
    d.peak_allocated = std::numeric_limits<int64_t>::min();
    for (size_t n = 0; n < events.size(); ++n) {
      const size_t i = events[n];
      running += m.bytes[i];
      m.bytes[i] >= 0 ? ++d.allocations : ++d.frees;
      const int64_t level = d.from_totals ? m.total_allocated[i] : running;
      if (level > d.peak_allocated) d.peak_allocated = level, peak_event = i, peak_index = n;
      if (m.total_reserved[i] >= 0) d.peak_reserved = std::max(d.peak_reserved.value_or(0), m.total_reserved[i]);
    }
    d.peak_at = m.ts[peak_event] - start;
    d.peak_op = op_at(m.ts[peak_event]);
    if (with_addr) {  // replay up to and including the peak's event
      std::unordered_map<int64_t, size_t> live;  // addr -> allocating event
      for (size_t n = 0; n <= peak_index; ++n) {
        const size_t i = events[n];
        if (m.bytes[i] > 0) live[m.addr[i]] = i;
        else live.erase(m.addr[i]);
      }
      std::vector<Allocation> all;
      for (const auto& [addr, i] : live) all.push_back({m.bytes[i], m.ts[i] - start, {}}), d.live_at_peak_bytes += m.bytes[i];
      std::sort(all.begin(), all.end(), [](const Allocation& a, const Allocation& b) { return a.bytes > b.bytes; });
      if (all.size() > 10) all.resize(10);
      for (Allocation& a : all) a.op = op_at(a.ts + start);
      d.live_at_peak = all;
    }
    out.push_back(d);
  }
  return out;
}

}  // namespace kl::trace
