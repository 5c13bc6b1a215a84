#include "trace/steps.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <map>
#include <optional>
#include <unordered_set>

#include "kernelab/error.h"

namespace kl::trace {

namespace {
std::optional<int64_t> number(std::string_view s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// N of a host event named "ProfilerStep#N".
std::optional<int64_t> step_number(std::string_view name) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  if (name.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  return number(name.substr(kPrefix.size()));
}

struct Span {
  Ns start = std::numeric_limits<Ns>::max(), end = std::numeric_limits<Ns>::min();
};

// The elements of a column set whose correlation (GPU ops, stream events) or start (host events) `keep` accepts.
template <class Keep> GpuOps gpu_subset(const GpuOps& g, Keep keep) {
  GpuOps out;
  for (size_t i = 0; i < g.size(); ++i)
    if (keep(g.correlation[i])) {
      out.push(g.ts[i], g.dur[i], g.device[i], g.stream[i], g.name[i]);
      out.correlation.push_back(g.correlation[i]), out.bytes.push_back(g.bytes[i]), out.kind.push_back(g.kind[i]);
      out.blocks_per_sm.push_back(g.blocks_per_sm[i]), out.occupancy_pct.push_back(g.occupancy_pct[i]);
    }
  return out;
}
template <class Keep> StreamEvents stream_subset(const StreamEvents& s, Keep keep) {
  StreamEvents out;
  for (size_t i = 0; i < s.size(); ++i)
    if (keep(s.correlation[i])) {
      out.push(s.ts[i], s.dur[i], s.device[i], s.stream[i], s.name[i]);
      out.correlation.push_back(s.correlation[i]);
    }
  return out;
}
template <class Keep> HostEvents host_subset(const HostEvents& h, Keep keep) {
  HostEvents out;
  for (size_t i = 0; i < h.size(); ++i)
    if (keep(h.ts[i])) {
      out.ts.push_back(h.ts[i]), out.dur.push_back(h.dur[i]), out.correlation.push_back(h.correlation[i]);
      out.name.push_back(h.name[i]), out.kind.push_back(h.kind[i]);
    }
  return out;
}

// Into `out`: the host events of `t` with `keep(ts)`, and the GPU ops and stream events whose
// correlation one of them carries. The other members of `out` are left as they are.
template <class Keep> void launched_by(const TraceData& t, TraceData& out, Keep keep) {
  out.host = host_subset(t.host, keep);
  std::unordered_set<int64_t> launched;
  for (size_t i = 0; i < out.host.size(); ++i)
    if (out.host.correlation[i] >= 0) launched.insert(out.host.correlation[i]);
  auto kept = [&](int64_t corr) { return corr >= 0 && launched.count(corr) > 0; };
  out.gpu = gpu_subset(t.gpu, kept);
  out.stream_events = stream_subset(t.stream_events, kept);
}
template <class Keep> void keep_launched_by(TraceData& t, Keep keep) { launched_by(t, t, keep); }
}  // namespace

StepWindow parse_steps(std::string_view text) {
  if (text == "all") return {};
  if (text == "complete") return {StepWindow::Kind::complete};
  const size_t dash = text.find('-');
  const auto a = dash == std::string_view::npos ? number(text) : number(text.substr(0, dash));
  const auto b = dash == std::string_view::npos ? a : number(text.substr(dash + 1));
  if (!a || !b || *a < 0 || *b < *a)
    bad_input(fmt::format("--steps '{}': expected all, complete, N or A-B with 0 <= A <= B (ProfilerStep numbers)", text));
  return {StepWindow::Kind::range, *a, *b};
}

StepSelection select_steps(TraceData& t, const StepWindow& w) {
  std::map<int64_t, Span> steps;
  for (size_t i = 0; i < t.host.size(); ++i)
    if (const auto n = step_number(t.names[t.host.name[i]])) {
      Span& s = steps[*n];
      s.start = std::min(s.start, t.host.ts[i]), s.end = std::max(s.end, t.host.ts[i] + t.host.dur[i]);
    }
  StepSelection sel;
  sel.steps_found = steps.size();
  if (w.kind == StepWindow::Kind::all) {
    sel.what = fmt::format("every event ({} profiler steps in the trace)", steps.size());
    return sel;
  }
  if (w.kind == StepWindow::Kind::complete) {
    if (steps.size() < 2) {
      sel.what = fmt::format("every event: {} profiler step{} in the trace, and HTA filters only with two or more",
                             steps.size(), steps.size() == 1 ? "" : "s");
      return sel;
    }
    Ns last_start = std::numeric_limits<Ns>::min();
    for (const auto& [n, s] : steps) last_start = std::max(last_start, s.start);
    keep_launched_by(t, [&](Ns ts) { return ts < last_start; });
    sel.filtered = true;
    sel.what = fmt::format("HTA's default: of the {} profiler steps #{}-#{}, the last dropped: host events starting before "
                           "#{} and the GPU ops they launched",
                           steps.size(), steps.begin()->first, steps.rbegin()->first, steps.rbegin()->first);
    return sel;
  }
  if (!steps.count(w.first) || !steps.count(w.last)) {
    std::string have;
    for (const auto& [n, s] : steps) have += (have.empty() ? "" : ", ") + std::to_string(n);
    bad_input(fmt::format("--steps {}-{}: the trace has profiler steps {}", w.first, w.last, have.empty() ? "none" : have));
  }
  const Ns from = steps.at(w.first).start, to = steps.at(w.last).end;
  keep_launched_by(t, [&](Ns ts) { return ts >= from && ts <= to; });
  sel.filtered = true;
  sel.what = fmt::format("steps {}-{}: host events inside them and the GPU ops they launched", w.first, w.last);
  return sel;
}

StepTable step_table(const TraceData& t, const AnalyzeOptions& opt) {
  std::map<int64_t, Span> steps;
  for (size_t i = 0; i < t.host.size(); ++i)
    if (const auto n = step_number(t.names[t.host.name[i]])) {
      Span& s = steps[*n];
      s.start = std::min(s.start, t.host.ts[i]), s.end = std::max(s.end, t.host.ts[i] + t.host.dur[i]);
    }
  StepTable table;
  // One step's events at a time (the names copied once), and only the two parts of analyze() a row reads.
  TraceData one;
  one.names = t.names;
  for (const auto& [n, span] : steps) {
    launched_by(t, one, [&](Ns ts) { return ts >= span.start && ts <= span.end; });
    Report r;
    r.options = opt;
    summarize_gpu(one, r);
    analyze_host(one, r);
    StepRow row{n, span.start, span.end - span.start};
    for (const auto& [dev, d] : r.devices)
      row.kernels += d.kernels, row.kernel_time += d.kernel_time, row.gpu_span += d.span(), row.gpu_busy += d.busy;
    for (const StreamIdle& s : r.idle) row.host_wait += s.host_wait, row.kernel_wait += s.kernel_wait, row.other_idle += s.other;
    table.rows.push_back(row);
  }
  if (table.rows.size() < 2) return table;
  std::vector<StepRow> sorted = table.rows;
  std::sort(sorted.begin(), sorted.end(), [](const StepRow& a, const StepRow& b) { return a.cpu_dur < b.cpu_dur; });
  const StepRow& median = sorted[(sorted.size() - 1) / 2];
  const StepRow& slow = sorted.back();
  // Where the extra time went: the component that grew most against the median step.
  const std::pair<const char*, Ns> parts[] = {
      {"kernel time (the GPU had more work)", slow.kernel_time - median.kernel_time},
      {"host wait (the GPU waited for the CPU to launch)", slow.host_wait - median.host_wait},
      {"kernel wait (short gaps between kernels)", slow.kernel_wait - median.kernel_wait},
      {"other idle (the GPU waited for neither: data, synchronisation)", slow.other_idle - median.other_idle}};
  const auto* most = std::max_element(std::begin(parts), std::end(parts), [](const auto& a, const auto& b) { return a.second < b.second; });
  const Ns extra = slow.cpu_dur - median.cpu_dur;
  table.slowest = fmt::format("step {} took {}, {} more than the median step {} ({}); ", slow.step, format_ns(double(slow.cpu_dur)),
                              format_ns(double(extra)), median.step, format_ns(double(median.cpu_dur)));
  if (2 * most->second >= extra)
    table.slowest += fmt::format("most of it {} more {}", format_ns(double(most->second)), most->first);
  else
    table.slowest += fmt::format("its GPU ops spanned {} against the median step's {}, and no part of them grew by half the "
                                 "difference: the extra time is on the CPU (data loading, Python, synchronisation)",
                                 format_ns(double(slow.gpu_span)), format_ns(double(median.gpu_span)));
  return table;
}

}  // namespace kl::trace
