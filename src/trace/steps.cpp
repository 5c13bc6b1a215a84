#include "trace/steps.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <map>
#include <optional>
#include <unordered_set>

#include "kernelab/error.h"
#include "trace/intervals.h"

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

// The elements i of a column set listed in idx, in that order.
GpuOps gpu_at(const GpuOps& g, const std::vector<size_t>& idx) {
  GpuOps out;
  for (size_t i : idx) {
    out.push(g.ts[i], g.dur[i], g.device[i], g.stream[i], g.name[i]);
    out.correlation.push_back(g.correlation[i]), out.bytes.push_back(g.bytes[i]), out.kind.push_back(g.kind[i]);
    out.blocks_per_sm.push_back(g.blocks_per_sm[i]), out.occupancy_pct.push_back(g.occupancy_pct[i]);
  }
  return out;
}
StreamEvents stream_at(const StreamEvents& s, const std::vector<size_t>& idx) {
  StreamEvents out;
  for (size_t i : idx) {
    out.push(s.ts[i], s.dur[i], s.device[i], s.stream[i], s.name[i]);
    out.correlation.push_back(s.correlation[i]);
  }
  return out;
}
HostEvents host_at(const HostEvents& h, const std::vector<size_t>& idx) {
  HostEvents out;
  for (size_t i : idx) {
    out.ts.push_back(h.ts[i]), out.dur.push_back(h.dur[i]), out.correlation.push_back(h.correlation[i]);
    out.name.push_back(h.name[i]), out.kind.push_back(h.kind[i]);
  }
  return out;
}
template <class Keep> std::vector<size_t> where(size_t n, Keep keep) {
  std::vector<size_t> idx;
  for (size_t i = 0; i < n; ++i)
    if (keep(i)) idx.push_back(i);
  return idx;
}

// Host events with `keep(ts)`, and the GPU ops and stream events whose correlation one of them carries.
template <class Keep> void keep_launched_by(TraceData& t, Keep keep) {
  t.host = host_at(t.host, where(t.host.size(), [&](size_t i) { return keep(t.host.ts[i]); }));
  std::unordered_set<int64_t> launched;
  for (size_t i = 0; i < t.host.size(); ++i)
    if (t.host.correlation[i] >= 0) launched.insert(t.host.correlation[i]);
  auto kept = [&](int64_t corr) { return corr >= 0 && launched.count(corr) > 0; };
  t.gpu = gpu_at(t.gpu, where(t.gpu.size(), [&](size_t i) { return kept(t.gpu.correlation[i]); }));
  t.stream_events = stream_at(t.stream_events, where(t.stream_events.size(), [&](size_t i) { return kept(t.stream_events.correlation[i]); }));
}

// The events of each step in one pass: a host event belongs to every step whose span holds its
// start, a GPU op or stream event to the steps of the host events that carry its correlation.
struct StepEvents {
  std::vector<size_t> host, gpu, stream;
};
std::vector<StepEvents> events_by_step(const TraceData& t, const std::vector<Span>& spans) {
  std::vector<StepEvents> out(spans.size());
  std::vector<size_t> order(spans.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return spans[a].start < spans[b].start; });
  std::vector<Ns> starts;
  bool ends_rise = true;  // then the steps holding a time are the last ones starting before it, back to the first that ended
  for (size_t k = 0; k < order.size(); ++k) {
    starts.push_back(spans[order[k]].start);
    if (k > 0 && spans[order[k]].end < spans[order[k - 1]].end) ends_rise = false;
  }
  std::unordered_map<int64_t, std::vector<size_t>> steps_of;  // correlation -> steps of the host events carrying it
  auto take = [&](size_t i, size_t step) {
    out[step].host.push_back(i);
    if (const int64_t c = t.host.correlation[i]; c >= 0) {
      std::vector<size_t>& v = steps_of[c];
      if (std::find(v.begin(), v.end(), step) == v.end()) v.push_back(step);
    }
  };
  for (size_t i = 0; i < t.host.size(); ++i) {
    const Ns ts = t.host.ts[i];
    if (!ends_rise) {
      for (size_t s = 0; s < spans.size(); ++s)
        if (ts >= spans[s].start && ts <= spans[s].end) take(i, s);
      continue;
    }
    for (size_t k = static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), ts) - starts.begin()); k-- > 0;) {
      if (spans[order[k]].end < ts) break;
      take(i, order[k]);
    }
  }
  auto assign = [&](const std::vector<int64_t>& corr, std::vector<size_t> StepEvents::*list) {
    for (size_t i = 0; i < corr.size(); ++i)
      if (auto it = steps_of.find(corr[i]); corr[i] >= 0 && it != steps_of.end())
        for (size_t s : it->second) (out[s].*list).push_back(i);
  };
  assign(t.gpu.correlation, &StepEvents::gpu);
  assign(t.stream_events.correlation, &StepEvents::stream);
  return out;
}
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

StepSelection select_window(TraceData& t, std::string_view text) {
  if (text.empty()) bad_input("--window: expected part of an annotation's name");
  std::vector<Interval> spans;
  std::map<std::string, size_t> names;  // every annotation name: the error lists some
  std::string first;  // the earliest match's name
  Ns first_ts = std::numeric_limits<Ns>::max();
  for (size_t i = 0; i < t.host.size(); ++i) {
    if (t.host.kind[i] != HostKind::user_annotation) continue;
    const std::string& name = t.names[t.host.name[i]];
    ++names[name];
    if (name.find(text) == std::string::npos) continue;
    spans.push_back({t.host.ts[i], t.host.ts[i] + t.host.dur[i]});
    if (t.host.ts[i] < first_ts) first_ts = t.host.ts[i], first = name;
  }
  if (spans.empty()) {
    std::vector<std::string> some;
    for (const auto& [name, n] : names) {
      if (some.size() == 10) break;
      some.push_back(fmt::format("'{}' ({}x)", shortened(name, 80), n));
    }
    bad_input(fmt::format("--window '{}': no user annotation's name contains it; the trace has {} annotation name{}{}{}", text,
                          names.size(), names.size() == 1 ? "" : "s", some.empty() ? "" : ": ", fmt::join(some, ", ")));
  }
  const size_t found = spans.size();
  spans = merge_intervals(std::move(spans));
  keep_launched_by(t, [&](Ns ts) {
    auto it = std::upper_bound(spans.begin(), spans.end(), ts, [](Ns x, const Interval& s) { return x < s.start; });
    return it != spans.begin() && ts <= std::prev(it)->end;
  });
  StepSelection sel;
  sel.filtered = true;
  sel.what = fmt::format("window '{}': host events inside the {} user annotation{} whose name contains it (the first: {}) and the "
                         "GPU ops they launched",
                         text, found, found == 1 ? "" : "s", shortened(first, 80));
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
  std::vector<Span> spans;
  for (const auto& [n, span] : steps) spans.push_back(span);
  const std::vector<StepEvents> by_step = events_by_step(t, spans);
  // One step's events at a time (the names copied once), and only the two parts of analyze() a row reads.
  TraceData one;
  one.names = t.names;
  size_t k = 0;
  for (const auto& [n, span] : steps) {
    const StepEvents& part = by_step[k++];
    one.host = host_at(t.host, part.host), one.gpu = gpu_at(t.gpu, part.gpu), one.stream_events = stream_at(t.stream_events, part.stream);
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
