#include "trace/report_json.h"

#include <string>

namespace kl::trace {

namespace {
using nlohmann::json;

double us(double ns) { return ns / 1000.0; }
json opt_us(const std::optional<double>& ns) { return ns ? json(us(*ns)) : json(nullptr); }

json device_json(const Report& r, int64_t dev, const DeviceSummary& d) {
  json j{{"span_us", us(d.span())},
         {"busy_us", us(d.busy)},
         {"idle_us", us(d.idle())},
         {"utilization", d.span() > 0 ? json(static_cast<double>(d.busy) / static_cast<double>(d.span())) : json(nullptr)},
         {"first_op_us", us(d.first)},
         {"kernel_count", d.kernels},
         {"kernel_time_us", us(d.kernel_time)},
         {"memcpy", {{"count", d.memcpys}, {"time_us", us(d.memcpy_time)}, {"bytes", d.memcpy_bytes}}},
         {"memset", {{"count", d.memsets}, {"time_us", us(d.memset_time)}, {"bytes", d.memset_bytes}}}};
  if (auto it = r.device_names.find(dev); it != r.device_names.end()) j["name"] = it->second;
  return j;
}

json kernels_json(const Report& r, int top) {
  json arr = json::array();
  const double total = static_cast<double>(r.kernel_time());
  for (const KernelStats& k : r.kernels) {
    if (top > 0 && arr.size() >= static_cast<size_t>(top)) break;
    arr.push_back({{"name", k.name}, {"type", kernel_type_name(k.type)}, {"count", k.count}, {"total_us", us(k.total)},
                   {"mean_us", us(k.mean)}, {"median_us", us(k.median)}, {"p90_us", us(k.p90)}, {"min_us", us(k.min)},
                   {"max_us", us(k.max)}, {"share_of_kernel_time", total > 0 ? static_cast<double>(k.total) / total : 0.0}});
  }
  return arr;
}

json temporal_json(const Report& r) {
  json j = json::object();
  for (const auto& [dev, t] : r.temporal) {
    const Ns span = t.span;  // clang 14 cannot capture a structured binding (P1091)
    auto pct = [span](Ns x) { return span > 0 ? 100.0 * static_cast<double>(x) / static_cast<double>(span) : 0.0; };
    j[std::to_string(dev)] = {{"span_us", us(t.span)},         {"idle_us", us(t.idle)},
                              {"compute_us", us(t.compute)},   {"non_compute_us", us(t.non_compute)},
                              {"communication_us", us(t.communication)}, {"memory_us", us(t.memory)},
                              {"other_us", us(t.other)},       {"idle_pct", pct(t.idle)},
                              {"compute_pct", pct(t.compute)}, {"non_compute_pct", pct(t.non_compute)}};
  }
  return j;
}

json idle_json(const Report& r) {
  json streams = json::array();
  Ns hw = 0, kw = 0, ot = 0;
  for (const StreamIdle& s : r.idle) {
    const double total = static_cast<double>(s.total());
    auto ratio = [&](Ns x) { return total != 0 ? json(static_cast<double>(x) / total) : json(nullptr); };
    streams.push_back({{"device", s.device},
                       {"stream", s.stream},
                       {"host_wait_us", us(s.host_wait)},
                       {"kernel_wait_us", us(s.kernel_wait)},
                       {"other_us", us(s.other)},
                       {"idle_us", us(s.total())},
                       {"host_wait_ratio", ratio(s.host_wait)},
                       {"kernel_wait_ratio", ratio(s.kernel_wait)},
                       {"other_ratio", ratio(s.other)},
                       {"gaps", {{"host_wait", s.host_wait_gaps}, {"kernel_wait", s.kernel_wait_gaps}, {"other", s.other_gaps}}}});
    hw += s.host_wait, kw += s.kernel_wait, ot += s.other;
  }
  return {{"kernel_wait_threshold_us", r.options.kernel_wait_us},
          {"definition",
           "per stream, each op after the first adds gap = start - previous op end: host wait if its launch call started "
           "after the previous op ended, kernel wait if gap < kernel_wait_threshold_us, else other (HTA)"},
          {"streams", streams},
          {"total", {{"host_wait_us", us(hw)}, {"kernel_wait_us", us(kw)}, {"other_us", us(ot)}}}};
}

json launch_json(const LaunchStats& L) {
  return {{"pairs", L.pairs},
          {"median_delay_us", opt_us(L.median_delay)},
          {"p90_delay_us", opt_us(L.p90_delay)},
          {"max_delay_us", us(L.max_delay)},
          {"kernels", L.kernels},
          {"short_kernels", L.short_kernels},
          {"short_ops", L.short_ops},
          {"short_kernel_gpu_us", us(L.short_kernel_gpu)},
          {"short_kernel_launch_us", us(L.short_kernel_cpu)},
          {"runtime_over_50us", L.runtime_over_50us},
          {"delay_over_100us", L.delay_over_100us},
          {"short_kernels_slow_launch", L.short_kernels_slow_launch},
          {"short_slow_launch_gpu_us", us(L.short_slow_launch_gpu)},
          {"short_slow_launch_us", us(L.short_slow_launch_cpu)},
          {"short_kernels_waited", L.short_kernels_waited},
          {"short_waited_gap_us", us(L.short_waited_gap)}};
}

json slow_calls_json(const SlowCalls& s) {
  json longest = json::array();
  for (const SlowCall& c : s.longest)
    longest.push_back({{"name", c.name}, {"why", c.why}, {"dur_us", us(c.dur)}, {"from_first_gpu_op_us", us(c.from_first_gpu_op)}});
  json idle = json::object();
  for (const auto& [dev, ns] : s.idle_covered) idle[std::to_string(dev)] = us(ns);
  return {{"threshold_us", us(kSlowCallNs)}, {"calls", s.calls}, {"total_us", us(s.total)}, {"longest", longest}, {"idle_covered_us", idle}};
}

json sync_json(const Report& r) {
  json calls = json::object();
  uint64_t n = 0;
  Ns blocked = 0;
  for (const auto& [name, s] : r.sync) {
    calls[name] = {{"calls", s.calls}, {"blocked_us", us(s.blocked)}};
    n += s.calls, blocked += s.blocked;
  }
  return {{"calls", calls}, {"total_calls", n}, {"total_blocked_us", us(blocked)}};
}

json overlap_json(const Report& r) {
  json j = json::object();
  for (const auto& [dev, o] : r.overlap) {
    const auto ratio = o.ratio();
    j[std::to_string(dev)] = {{"communication_us", us(o.communication)},
                              {"overlapped_us", us(o.overlapped)},
                              {"ratio", ratio ? json(*ratio) : json(nullptr)}};
  }
  return j;
}

json gaps_json(const Report& r) {
  json devs = json::object();
  for (const auto& [dev, st] : r.gap_stats) devs[std::to_string(dev)] = {{"count", st.count}, {"total_us", us(st.total)}};
  json longest = json::array();
  for (const Gap& g : r.gaps) {
    json cpu = json::array();
    for (const CpuActivity& c : g.cpu) cpu.push_back({{"name", c.name}, {"cat", c.cat}, {"overlap_us", us(c.overlap)}, {"dur_us", us(c.dur)}});
    longest.push_back({{"device", g.device}, {"start_us", us(g.start)}, {"dur_us", us(g.dur)}, {"cpu_busy_us", us(g.cpu_busy)}, {"cpu", cpu}});
  }
  json util = json::object();
  for (const auto& [dev, u] : r.utilization) util[std::to_string(dev)] = u;
  return {{"threshold_us", r.options.gap_us}, {"devices", devs}, {"longest", longest}, {"utilization_chunks", util}};
}

json summary_json(const Report& r) {
  json devs = json::object();
  for (const auto& [dev, d] : r.devices) devs[std::to_string(dev)] = device_json(r, dev, d);
  return {{"source", r.source}, {"kernel_count", r.kernel_count()}, {"kernel_time_us", us(r.kernel_time())}, {"devices", devs},
          {"slow_api_calls", {{"calls", r.slow_calls.calls}, {"total_us", us(r.slow_calls.total)}}}};
}

}  // namespace

json report_json(const Report& r, int top) {
  json j = summary_json(r);
  j["events"] = r.events;
  j["json_bytes"] = r.bytes;
  j["gpu_activity"] = r.gpu_activity();
  j["top_kernels"] = kernels_json(r, top);
  j["temporal_breakdown"] = temporal_json(r);
  j["idle_breakdown"] = idle_json(r);
  j["median_launch_delay_us"] = opt_us(r.launch.median_delay);
  j["launch"] = launch_json(r.launch);
  j["sync"] = sync_json(r);
  j["overlap"] = overlap_json(r);
  j["gaps"] = gaps_json(r);
  j["slow_api_calls"] = slow_calls_json(r.slow_calls);
  json findings = json::array();
  for (size_t i = 0; i < r.findings.size(); ++i)
    findings.push_back({{"rank", i + 1}, {"kind", r.findings[i].kind}, {"impact_us", us(r.findings[i].impact)}, {"text", r.findings[i].text}});
  j["findings"] = findings;
  return j;
}

json diff_json(const TraceDiff& d, int top) {
  json kernels = json::array();
  for (const KernelDelta& k : d.kernels) {
    if (top > 0 && kernels.size() >= static_cast<size_t>(top)) break;
    kernels.push_back({{"name", k.name},
                       {"count_a", k.count_a},
                       {"count_b", k.count_b},
                       {"count_delta", static_cast<int64_t>(k.count_b) - static_cast<int64_t>(k.count_a)},
                       {"total_us_a", us(k.total_a)},
                       {"total_us_b", us(k.total_b)},
                       {"delta_us", us(k.delta())},
                       {"in", k.count_a && k.count_b ? "both" : k.count_a ? "a" : "b"}});
  }
  return {{"a", summary_json(*d.a)},
          {"b", summary_json(*d.b)},
          {"kernel_count_delta", static_cast<int64_t>(d.b->kernel_count()) - static_cast<int64_t>(d.a->kernel_count())},
          {"kernel_time_delta_us", us(d.b->kernel_time() - d.a->kernel_time())},
          {"kernels", kernels}};
}

}  // namespace kl::trace
