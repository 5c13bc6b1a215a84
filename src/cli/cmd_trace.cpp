// `kernelab trace analyze FILE` and `kernelab trace diff A B`: PyTorch profiler (Kineto) Chrome
// traces, .json or .json.gz. The analysis is src/trace; this file reads flags and prints.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <cmath>
#include <optional>

#include "cli/common.h"
#include "kernelab/error.h"
#include "trace/critical_path.h"
#include "trace/gpu_metrics.h"
#include "trace/load.h"
#include "trace/memory.h"
#include "trace/ranks.h"
#include "trace/steps.h"
#include "trace/report_json.h"

namespace kl::cli {

namespace {
using namespace kl::trace;

std::string us_text(double ns) { return format_ns(ns); }
std::string pct_text(double part, double whole) { return whole > 0 ? fmt::format("{:.1f}%", 100.0 * part / whole) : "-"; }
std::string short_name(const std::string& s, size_t n = 70) { return s.size() <= n ? s : s.substr(0, n - 3) + "..."; }

void print_devices(const Report& r) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& [dev, d] : r.devices) {
    auto name = r.device_names.count(dev) ? r.device_names.at(dev) : std::string();
    rows.push_back({std::to_string(dev), name, us_text(d.span()), us_text(d.busy), us_text(d.idle()), pct_text(d.busy, d.span()),
                    std::to_string(d.kernels), us_text(d.kernel_time),
                    fmt::format("{} / {} / {} B", d.memcpys, us_text(d.memcpy_time), d.memcpy_bytes),
                    fmt::format("{} / {} / {} B", d.memsets, us_text(d.memset_time), d.memset_bytes)});
  }
  fmt::print("\nGPU time per device (GPU ops: kernels, memcpy, memset; busy = their union; idle = span - busy)\n");
  print_table({"device", "name", "span", "busy", "idle", "util", "kernels", "kernel time", "memcpy n/time/bytes", "memset n/time/bytes"},
              rows);
}

void print_kernels(const Report& r, int top) {
  std::vector<std::vector<std::string>> rows;
  for (const KernelStats& k : r.kernels) {
    if (top > 0 && rows.size() >= static_cast<size_t>(top)) break;
    rows.push_back({us_text(static_cast<double>(k.total)), pct_text(k.total, r.kernel_time()), std::to_string(k.count), us_text(k.mean),
                    us_text(k.median), us_text(k.p90), kernel_type_name(k.type), short_name(k.name)});
  }
  fmt::print("\ntop kernels by summed time ({} names, {} kernels)\n", r.kernels.size(), r.kernel_count());
  print_table({"total", "share", "count", "mean", "median", "p90", "type", "name"}, rows);
}

void print_breakdowns(const Report& r) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& [dev, t] : r.temporal)
    rows.push_back({std::to_string(dev), us_text(t.span), pct_text(t.idle, t.span), pct_text(t.compute, t.span),
                    pct_text(t.non_compute, t.span), us_text(t.communication), us_text(t.memory), us_text(t.other)});
  fmt::print("\ntemporal breakdown (HTA: events on a CUDA stream, typed by name; non-compute = communication + memory + other)\n");
  print_table({"device", "span", "idle", "compute", "non-compute", "communication", "memory", "other"}, rows);

  rows.clear();
  for (const StreamIdle& s : r.idle)
    rows.push_back({std::to_string(s.device), std::to_string(s.stream), us_text(s.host_wait), us_text(s.kernel_wait), us_text(s.other),
                    us_text(s.total())});
  fmt::print("\nidle breakdown per stream (HTA: host wait = launch call started after the previous op ended; kernel wait = gap < {:g} us)\n",
             r.options.kernel_wait_us);
  print_table({"device", "stream", "host wait", "kernel wait", "other", "idle"}, rows);

  for (const auto& [dev, o] : r.overlap)
    if (auto ratio = o.ratio())
      fmt::print("\ncompute/communication overlap, GPU {}: {:.1f}% of {} of communication ran under compute\n", dev, 100.0 * *ratio,
                 us_text(o.communication));
}

void print_host(const Report& r) {
  const LaunchStats& L = r.launch;
  fmt::print("\nlaunches: {} GPU ops matched to their launch calls (cudaLaunchKernel(ExC), cudaMemcpyAsync, cudaMemsetAsync, cuLaunchKernel(Ex), HIP's)", L.pairs);
  if (L.median_delay)
    fmt::print("; launch delay (op start - call end, >= 0) median {}, p90 {}, max {}", us_text(*L.median_delay), us_text(*L.p90_delay),
               us_text(L.max_delay));
  const std::string slow = us_text(kSlowCallNs);
  fmt::print("\n  short kernels (GPU time < launch call): {} of {}; the GPU waited for {} of them ({} of host wait before them), {} "
             "launched by calls over {}\n",
             L.short_kernels, L.kernels, L.short_kernels_waited, us_text(L.short_waited_gap), L.short_kernels_slow_launch, slow);
  const SlowCalls& s = r.slow_calls;
  if (s.calls > 0) {
    fmt::print("CUDA API calls over {} with no GPU op running: {}, {} in all;", slow, s.calls, us_text(s.total));
    for (const SlowCall& c : s.longest)
      fmt::print(" {} {} at {}{} from the first GPU op;", c.name, us_text(c.dur), c.from_first_gpu_op >= 0 ? "+" : "", us_text(c.from_first_gpu_op));
    fmt::print("\n");
  }
  if (!r.sync.empty()) {
    fmt::print("synchronisation (CPU blocked):");
    for (const auto& [name, s] : r.sync) fmt::print(" {} {}× {};", name, s.calls, us_text(s.blocked));
    fmt::print("\n");
  }
}

void print_gaps(const Report& r) {
  fmt::print("\nGPU gaps longer than {:g} us:", r.options.gap_us);
  for (const auto& [dev, st] : r.gap_stats) fmt::print(" GPU {} {} gaps, {};", dev, st.count, us_text(st.total));
  fmt::print("\n");
  for (const Gap& g : r.gaps) {
    std::string cpu;
    for (const CpuActivity& c : g.cpu) cpu += fmt::format("{}{} ({}, {})", cpu.empty() ? "" : "; ", short_name(c.name, 50), c.cat, us_text(c.overlap));
    fmt::print("  GPU {} +{}: {} idle, CPU busy {}: {}\n", g.device, us_text(g.start), us_text(g.dur), pct_text(g.cpu_busy, g.dur),
               cpu.empty() ? "no CPU event traced" : cpu);
  }
  for (const auto& [dev, u] : r.utilization) {
    fmt::print("utilisation of GPU {} in {} chunks of its span:", dev, u.size());
    for (double x : u) fmt::print(" {:.0f}%", 100 * x);
    fmt::print("\n");
  }
}

void print_report(const Report& r, int top) {
  fmt::print("{}: {} events, {} kernels on {} device(s)\n", r.source, r.events, r.kernel_count(), r.devices.size());
  fmt::print("\nfindings\n");
  for (size_t i = 0; i < r.findings.size(); ++i) fmt::print("  {}. {}\n", i + 1, r.findings[i].text);
  if (!r.gpu_activity()) return;
  print_devices(r);
  print_kernels(r, top);
  print_breakdowns(r);
  print_host(r);
  print_gaps(r);
}

void print_diff(const TraceDiff& d, int top) {
  fmt::print("A {}: {} kernels, {}\nB {}: {} kernels, {}\n", d.a->source, d.a->kernel_count(), us_text(d.a->kernel_time()),
             d.b->source, d.b->kernel_count(), us_text(d.b->kernel_time()));
  for (const auto& [dev, a] : d.a->devices) {
    auto it = d.b->devices.find(dev);
    if (it == d.b->devices.end()) continue;
    const DeviceSummary& b = it->second;
    fmt::print("GPU {}: span {} -> {}, busy {} -> {}, idle {} -> {}\n", dev, us_text(a.span()), us_text(b.span()), us_text(a.busy),
               us_text(b.busy), us_text(a.idle()), us_text(b.idle()));
  }
  const SlowCalls &sa = d.a->slow_calls, &sb = d.b->slow_calls;
  if (sa.calls + sb.calls > 0)
    fmt::print("CUDA API calls over {} with no GPU op running (start-up, allocation): {} ({}) -> {} ({})\n", us_text(kSlowCallNs),
               sa.calls, us_text(sa.total), sb.calls, us_text(sb.total));
  std::vector<std::vector<std::string>> rows;
  for (const KernelDelta& k : d.kernels) {
    if (top > 0 && rows.size() >= static_cast<size_t>(top)) break;
    rows.push_back({fmt::format("{}{}", k.delta() > 0 ? "+" : "", us_text(k.delta())), us_text(k.total_a), us_text(k.total_b),
                    std::to_string(k.count_a), std::to_string(k.count_b), short_name(k.name)});
  }
  fmt::print("\nkernels by time change (B - A)\n");
  print_table({"delta", "time A", "time B", "count A", "count B", "name"}, rows);
}

// Per profiler step (every step, whatever --steps keeps): the GPU ops each step launched.
void print_steps(const StepTable& table) {
  if (table.rows.empty()) return;
  fmt::print("\nprofiler steps (GPU ops launched inside each ProfilerStep#N, all devices; waits: the idle breakdown's gaps summed over streams)\n");
  std::vector<std::vector<std::string>> rows;
  for (const StepRow& s : table.rows)
    rows.push_back({std::to_string(s.step), format_ns(double(s.cpu_dur)), std::to_string(s.kernels), format_ns(double(s.kernel_time)),
                    format_ns(double(s.gpu_span)), format_ns(double(s.gpu_busy)), format_ns(double(s.gpu_span - s.gpu_busy)), format_ns(double(s.host_wait)),
                    format_ns(double(s.kernel_wait)), format_ns(double(s.other_idle))});
  print_table({"step", "CPU time", "kernels", "kernel time", "GPU span", "GPU busy", "GPU idle", "host wait", "kernel wait", "other wait"}, rows);
  if (!table.slowest.empty()) fmt::print("slowest: {}\n", table.slowest);
}

std::string fraction_text(const std::optional<double>& v, uint64_t with, uint64_t kernels, double scale, const char* unit) {
  if (!v) return fmt::format("- (no kernel has the field)");
  return fmt::format("{:.2f}{} ({} of {} kernels have it)", *v * scale, unit, with, kernels);
}

// The TensorBoard plugin's GPU metrics (gpu_metrics.h), over the whole trace whatever --steps keeps.
void print_gpu_metrics(const GpuMetrics& m) {
  if (m.devices.empty()) return;
  fmt::print("\nGPU metrics (the TensorBoard PyTorch profiler plugin's definitions; range: {}, {})\n", m.range_source,
             format_ns(double(m.range_end - m.range_start)));
  std::vector<std::vector<std::string>> rows;
  for (const auto& [dev, d] : m.devices)
    rows.push_back({std::to_string(dev), fmt::format("{:.2f}%", 100 * d.utilization),
                    fraction_text(d.sm_efficiency, d.with_blocks_per_sm, d.kernels, 100, "%"),
                    fraction_text(d.achieved_occupancy_pct, d.with_occupancy, d.kernels, 1, "%")});
  print_table({"device", "GPU utilization", "est. SM efficiency", "est. achieved occupancy"}, rows);
}

nlohmann::json gpu_metrics_json(const GpuMetrics& m) {
  nlohmann::json devices = nlohmann::json::object();
  for (const auto& [dev, d] : m.devices) {
    nlohmann::json timeline = nlohmann::json::array();
    for (const auto& [at, u] : d.timeline) timeline.push_back({{"start_us", at / 1e3}, {"utilization", u}});
    devices[std::to_string(dev)] = {
        {"utilization", d.utilization},
        {"est_sm_efficiency", d.sm_efficiency ? nlohmann::json(*d.sm_efficiency) : nlohmann::json(nullptr)},
        {"est_achieved_occupancy_pct", d.achieved_occupancy_pct ? nlohmann::json(*d.achieved_occupancy_pct) : nlohmann::json(nullptr)},
        {"kernels", d.kernels}, {"kernels_with_blocks_per_sm", d.with_blocks_per_sm}, {"kernels_with_occupancy", d.with_occupancy},
        {"timeline", timeline}};
  }
  return {{"range_start_us", m.range_start / 1e3}, {"range_end_us", m.range_end / 1e3}, {"range", m.range_source},
          {"bucket_us", m.bucket / 1e3}, {"devices", devices}};
}

std::string bytes_text(int64_t b) { return fmt::format("{:.1f} MiB", double(b) / (1 << 20)); }

void print_memory(const std::vector<DeviceMemory>& memory) {
  if (memory.empty()) return;
  fmt::print("\nmemory ([memory] events, profile_memory=True; peak allocated: the allocator's Total Allocated, or the "
             "running sum of Bytes from the trace's start where the trace has no totals)\n");
  std::vector<std::vector<std::string>> rows;
  for (const DeviceMemory& d : memory)
    rows.push_back({d.device, bytes_text(d.peak_allocated), d.from_totals ? "Total Allocated" : "sum of Bytes",
                    d.peak_reserved ? bytes_text(*d.peak_reserved) : "-", "+" + format_ns(double(d.peak_at)),
                    d.peak_op.empty() ? "-" : short_name(d.peak_op, 90), fmt::format("{} / {}", d.allocations, d.frees)});
  print_table({"device", "peak allocated", "from", "peak reserved", "at", "under", "allocs / frees"}, rows);
  for (const DeviceMemory& d : memory) {
    if (!d.live_at_peak) {
      fmt::print("{}: the events carry no Addr (PyTorch before 1.10), so the allocations live at the peak are unknown\n", d.device);
      continue;
    }
    fmt::print("{}: live at the peak, largest first ({} in all):", d.device, bytes_text(d.live_at_peak_bytes));
    for (const Allocation& a : *d.live_at_peak) fmt::print(" {} ({})", bytes_text(a.bytes), a.op.empty() ? "-" : short_name(a.op));
    fmt::print("\n");
  }
}

nlohmann::json memory_json(const std::vector<DeviceMemory>& memory) {
  nlohmann::json out = nlohmann::json::object();
  for (const DeviceMemory& d : memory) {
    nlohmann::json live = nullptr;
    if (d.live_at_peak) {
      live = nlohmann::json::array();
      for (const Allocation& a : *d.live_at_peak) live.push_back({{"bytes", a.bytes}, {"ts_us", a.ts / 1e3}, {"operator", a.op}});
    }
    out[d.device] = {{"peak_allocated_bytes", d.peak_allocated}, {"from", d.from_totals ? "total_allocated" : "sum_of_bytes"},
                     {"peak_reserved_bytes", d.peak_reserved ? nlohmann::json(*d.peak_reserved) : nlohmann::json(nullptr)},
                     {"peak_at_us", d.peak_at / 1e3}, {"operator", d.peak_op}, {"allocations", d.allocations}, {"frees", d.frees},
                     {"live_at_peak", live}, {"live_at_peak_bytes", d.live_at_peak ? nlohmann::json(d.live_at_peak_bytes) : nlohmann::json(nullptr)}};
  }
  return out;
}

// Peak allocated per device, A against B (devices either trace has).
void print_memory_diff(const std::vector<DeviceMemory>& a, const std::vector<DeviceMemory>& b) {
  std::map<std::string, std::pair<const DeviceMemory*, const DeviceMemory*>> both;
  for (const DeviceMemory& d : a) both[d.device].first = &d;
  for (const DeviceMemory& d : b) both[d.device].second = &d;
  if (both.empty()) return;
  fmt::print("\npeak memory allocated (B - A)\n");
  std::vector<std::vector<std::string>> rows;
  for (const auto& [dev, p] : both) {
    const int64_t pa = p.first ? p.first->peak_allocated : 0, pb = p.second ? p.second->peak_allocated : 0;
    rows.push_back({dev, p.first ? bytes_text(pa) : "-", p.second ? bytes_text(pb) : "-",
                    fmt::format("{}{}", pb >= pa ? "+" : "-", bytes_text(std::abs(pb - pa))),
                    p.second && !p.second->peak_op.empty() ? short_name(p.second->peak_op, 50) : "-"});
  }
  print_table({"device", "peak A", "peak B", "delta", "B's peak under"}, rows);
}

// Several ranks' traces (trace/ranks.h).
void analyze_ranks_command(const std::vector<std::string>& args, const std::string& steps, int top, bool json) {
  if (steps != "all") bad_input(fmt::format("--steps {}: applies to one trace, not to several ranks' traces", steps));
  std::vector<RankTrace> traces;
  for (const std::string& f : rank_trace_files(args)) traces.push_back(load_rank_trace(f));
  const RanksReport r = analyze_ranks(std::move(traces));
  if (json) fmt::print("{}\n", ranks_json(r).dump(2));
  else fmt::print("{}", ranks_text(r, top));
}

struct AnalyzeFlags {
  AnalyzeOptions opt;
  int top = 10;
  bool json = false;
  std::string steps = "all";
  std::string window;
  void attach(CLI::App& sub) {
    sub.add_option("--steps", steps,
                   "all (every event), complete (HTA's default: the events of the profiler steps before the last one) "
                   "or A-B (ProfilerStep#A to #B)")
        ->capture_default_str();
    sub.add_option("--window", window,
                   "only the host events inside the user annotations (record_function; NVTX ranges in bench --trace's "
                   "traces) whose name contains this text, and the GPU ops they launched: e.g. a measured phase after a "
                   "warm-up; after --steps");
    sub.add_option("--top", top, "kernels listed (0: all)")->check(CLI::NonNegativeNumber)->capture_default_str();
    sub.add_option("--kernel-wait-us", opt.kernel_wait_us, "idle breakdown: a gap shorter than this (us) is kernel wait")
        ->check(CLI::NonNegativeNumber)->capture_default_str();
    sub.add_option("--gap-us", opt.gap_us, "GPU gaps longer than this (us) are listed")->check(CLI::NonNegativeNumber)->capture_default_str();
    sub.add_option("--chunks", opt.chunks, "utilisation per chunk: chunks of each device's span")->check(CLI::Range(1, 1000))->capture_default_str();
    sub.add_flag("--json", json, "print one JSON object");
  }
};
}  // namespace

void add_trace(CLI::App& app) {
  auto* trace = app.add_subcommand("trace", "PyTorch profiler (Kineto) trace analysis: analyze FILE, diff A B");
  trace->require_subcommand(1);

  auto* analyze_cmd = trace->add_subcommand(
      "analyze", "where the GPU's time went in one trace (.json or .json.gz); given several ranks' traces (files or a folder), "
                 "per-rank communication, exposed communication and the slowest rank of each collective");
  static std::vector<std::string> files;
  static AnalyzeFlags af;
  analyze_cmd->add_option("file", files, "trace file; several files or a folder: one trace per rank of a job")->required();
  af.attach(*analyze_cmd);
  static std::string cp_spec;
  static bool cp_launch_edges = false;
  analyze_cmd->add_option("--critical-path", cp_spec,
                          "HTA's critical path of one iteration: N (ProfilerStep#N), NAME[@K|@A-B] (HTA's annotation and "
                          "instance_id) or all; with --steps complete on HTA's default events");
  analyze_cmd->add_flag("--cp-launch-edges", cp_launch_edges,
                        "critical path: a zero-weight edge from every launch to its kernel (HTA's CRITICAL_PATH_ADD_ZERO_WEIGHT_LAUNCH_EDGE=1)");
  analyze_cmd->callback([] {
    if (files.size() > 1 || std::filesystem::is_directory(files[0])) {
      if (!cp_spec.empty()) bad_input("--critical-path: applies to one trace, not to several ranks' traces");
      if (!af.window.empty()) bad_input("--window: applies to one trace, not to several ranks' traces");
      return analyze_ranks_command(files, af.steps, af.top, af.json);
    }
    const std::string& file = files[0];
    const StepWindow window = parse_steps(af.steps);
    std::optional<CriticalPath> cpath;
    if (!cp_spec.empty())
      cpath = critical_path(file, {parse_critical_path(cp_spec), window.kind == StepWindow::Kind::complete, cp_launch_edges, af.top});
    TraceData t = load_trace_file(file);
    const StepTable table = step_table(t, af.opt);
    const GpuMetrics metrics = gpu_metrics(t);
    const std::vector<DeviceMemory> memory = memory_peaks(t);
    const StepSelection sel = select_steps(t, window);
    const std::optional<StepSelection> named = af.window.empty() ? std::nullopt : std::optional(select_window(t, af.window));
    const Report r = analyze(t, af.opt);
    if (af.json) {
      nlohmann::json j = report_json(r, af.top);
      j["steps"] = {{"window", af.steps}, {"found", sel.steps_found}, {"filtered", sel.filtered}, {"kept", sel.what}};
      j["window"] = named ? nlohmann::json{{"text", af.window}, {"kept", named->what}} : nlohmann::json(nullptr);
      nlohmann::json rows = nlohmann::json::array();
      for (const StepRow& s : table.rows)
        rows.push_back({{"step", s.step}, {"cpu_us", s.cpu_dur / 1e3}, {"kernels", s.kernels}, {"kernel_time_us", s.kernel_time / 1e3},
                        {"gpu_span_us", s.gpu_span / 1e3}, {"gpu_busy_us", s.gpu_busy / 1e3}, {"host_wait_us", s.host_wait / 1e3},
                        {"kernel_wait_us", s.kernel_wait / 1e3}, {"other_idle_us", s.other_idle / 1e3}});
      j["step_table"] = {{"rows", rows}, {"slowest", table.slowest}};
      j["gpu_metrics"] = gpu_metrics_json(metrics);
      j["memory"] = memory_json(memory);
      if (cpath) j["critical_path"] = critical_path_json(*cpath);
      fmt::print("{}\n", j.dump(2));
      return;
    }
    fmt::print("steps: {}\n", sel.what);
    if (named) fmt::print("{}\n", named->what);
    print_report(r, af.top);
    print_steps(table);
    print_gpu_metrics(metrics);
    print_memory(memory);
    if (cpath) fmt::print("{}", format_critical_path(*cpath));
  });

  auto* diff_cmd = trace->add_subcommand("diff", "per-kernel count and time differences between two traces");
  static std::string file_a, file_b;
  static AnalyzeFlags df;
  diff_cmd->add_option("a", file_a, "trace A")->required();
  diff_cmd->add_option("b", file_b, "trace B")->required();
  df.attach(*diff_cmd);
  diff_cmd->callback([] {
    const StepWindow window = parse_steps(df.steps);
    TraceData ta = load_trace_file(file_a), tb = load_trace_file(file_b);
    select_steps(ta, window), select_steps(tb, window);
    if (!df.window.empty()) select_window(ta, df.window), select_window(tb, df.window);
    const std::vector<DeviceMemory> mem_a = memory_peaks(ta), mem_b = memory_peaks(tb);
    const Report a = analyze(ta, df.opt);
    const Report b = analyze(tb, df.opt);
    const TraceDiff d = diff_reports(a, b);
    if (df.json) {
      nlohmann::json j = diff_json(d, df.top);
      j["memory"] = {{"a", memory_json(mem_a)}, {"b", memory_json(mem_b)}};
      fmt::print("{}\n", j.dump(2));
      return;
    }
    print_diff(d, df.top);
    print_memory_diff(mem_a, mem_b);
  });
}

}  // namespace kl::cli
