// The critical path's input: HTA's trace rows (hta/common/trace_parser.py), its correlation links
// (trace.py transform_correlation_to_index), its default event set and the iteration's events.
#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "kernelab/error.h"
#include "trace/byte_source.h"
#include "trace/cp_graph.h"
#include "trace/event_scanner.h"
#include "trace/hta_int.h"

namespace kl::trace::cp {

namespace od = simdjson::ondemand;

namespace {

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}


double as_double(std::string_view token) {
  token = trimmed(token);
  double d = 0;
  auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), d);
  return ec == std::errc() && end == token.data() + token.size() && std::isfinite(d) ? d : 0.0;
}

bool is_step_name(std::string_view name) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  return name.substr(0, kPrefix.size()) == kPrefix && name.size() > kPrefix.size() &&
         std::isdigit(static_cast<unsigned char>(name[kPrefix.size()]));
}

void index_rows(Rows& r) {
  r.at.clear();
  for (uint32_t i = 0; i < r.events.size(); ++i) r.at.emplace(r.events[i].index, i);
}

}  // namespace

bool on_gpu(const Rows& r, const Event& e) {
  if (e.stream >= 0 && e.corr >= 0) return true;
  const std::string& n = r.name(e);
  return n == "Event Sync" || n == "Context Sync";
}

Rows load_rows(const std::string& file) {
  Rows r;
  od::parser parser;
  const uint32_t trace_cat = r.names.intern("Trace");
  ByteSource src = ByteSource::open_file(file);
  ScanCallbacks cb;
  cb.on_event = [&](std::string_view json, size_t index) {
    od::document doc;
    od::object obj;
    if (parser.iterate(json.data(), json.size(), json.size() + kEventPadding).get(doc) || doc.get_object().get(obj)) return;
    Event e;
    e.index = static_cast<int64_t>(index);
    bool has_cat = false, has_dur = false;
    double ts = 0, dur = 0;
    e.name = r.names.intern("");
    for (auto field : obj) {
      std::string_view key, s;
      od::value v;
      if (field.unescaped_key().get(key) || field.value().get(v)) return;
      if (key == "cat") {
        has_cat = !v.get_string().get(s);
        if (has_cat) e.cat = r.names.intern(s);
      } else if (key == "name") {
        if (!v.get_string().get(s)) e.name = r.names.intern(s);
      } else if (key == "ts") {
        ts = as_double(v.raw_json_token());
      } else if (key == "dur") {
        od::json_type t;
        has_dur = !v.type().get(t) && t == od::json_type::number;
        if (has_dur) dur = as_double(v.raw_json_token());
      } else if (key == "pid") {
        e.pid = r.names.intern(trimmed(v.raw_json_token()));
      } else if (key == "tid") {
        e.tid = r.names.intern(trimmed(v.raw_json_token()));
      } else if (key == "args") {
        od::object a;
        if (v.get_object().get(a)) continue;
        for (auto arg : a) {
          std::string_view k;
          od::value x;
          if (arg.unescaped_key().get(k) || arg.value().get(x)) break;
          if (k == "stream") e.stream = hta_int(x, -1);
          else if (k == "correlation") e.corr = hta_int(x, -1);
          else if (k == "wait_on_stream") e.wait_stream = hta_int(x, -1);
          else if (k == "wait_on_cuda_event_record_corr_id") e.wait_corr = hta_int(x, -1);
        }
      }
    }
    if (!has_cat || !has_dur || e.cat == trace_cat) return;
    // HTA rounds in float64: a 1.7e15 us epoch time holds quarter-microsecond steps only.
    e.ts = static_cast<int64_t>(std::ceil(ts));
    e.dur = static_cast<int64_t>(std::floor(ts + dur)) - e.ts;
    r.events.push_back(e);
  };
  scan_trace_events(src, cb);
  index_rows(r);
  // ic: a CPU event and the GPU event sharing its correlation point at each other.
  std::unordered_map<int64_t, std::vector<uint32_t>> gpu_by_corr;
  for (uint32_t i = 0; i < r.events.size(); ++i) {
    Event& e = r.events[i];
    e.ic = std::min<int64_t>(e.corr, 0);
    if (e.corr != -1 && on_gpu(r, e)) gpu_by_corr[e.corr].push_back(i);
  }
  for (Event& e : r.events) {
    if (e.corr == -1 || on_gpu(r, e)) continue;
    auto it = gpu_by_corr.find(e.corr);
    if (it == gpu_by_corr.end()) continue;
    for (uint32_t g : it->second) e.ic = r.events[g].index, r.events[g].ic = e.index;
  }
  return r;
}

void keep_hta_default(Rows& r) {
  std::vector<uint32_t> step_names;
  for (const Event& e : r.events)
    if (is_step_name(r.name(e)) && std::find(step_names.begin(), step_names.end(), e.name) == step_names.end())
      step_names.push_back(e.name);
  if (step_names.size() < 2) return;
  int64_t last_start = std::numeric_limits<int64_t>::min();
  for (const Event& e : r.events)
    if (!on_gpu(r, e) && is_step_name(r.name(e))) last_start = std::max(last_start, e.ts);
  std::vector<Event> gpu, cpu;
  std::unordered_map<int64_t, bool> corrs;
  for (const Event& e : r.events)
    if (!on_gpu(r, e) && e.ts < last_start) cpu.push_back(e), corrs[e.corr] = true;
  for (const Event& e : r.events)
    if (on_gpu(r, e) && corrs.count(e.corr)) gpu.push_back(e);
  gpu.insert(gpu.end(), cpu.begin(), cpu.end());  // HTA concatenates the GPU rows first
  r.events = std::move(gpu);
  index_rows(r);
}

std::pair<int64_t, int64_t> iteration_window(const Rows& r, const CriticalPathSpec& s) {
  int64_t start = std::numeric_limits<int64_t>::max(), end = std::numeric_limits<int64_t>::min();
  auto take = [&](const Event& e) { start = std::min(start, e.ts), end = std::max(end, e.end()); };
  if (s.whole) {
    for (const Event& e : r.events) take(e);
  } else if (s.step) {
    for (const Event& e : r.events)
      if (r.name(e) == s.annotation && r.names[e.cat] != "gpu_user_annotation") {
        take(e);
        break;
      }
  } else {
    int64_t k = 0;
    for (const Event& e : r.events) {
      if (r.name(e).find(s.annotation) == std::string::npos) continue;
      if (k >= s.first && k <= s.last) take(e);
      if (++k > s.last) break;
    }
  }
  if (start > end) bad_input(fmt::format("--critical-path {}: no such event in the trace{}", s.text,
                                         s.step || s.whole ? "" : " (NAME@K counts from 0)"));
  return {start, end};
}

std::vector<uint32_t> clip(const Rows& r, int64_t start, int64_t end) {
  auto inside = [&](const Event& e) { return e.ts >= start && e.ts <= end && e.dur > 0; };
  std::unordered_map<int64_t, bool> launched_inside;  // GPU event index -> a launch call starting in the window
  for (const Event& e : r.events)
    if (e.stream == -1 && inside(e)) launched_inside[e.ic] = true;
  std::vector<uint32_t> kept;
  for (uint32_t i = 0; i < r.events.size(); ++i) {
    const Event& e = r.events[i];
    const bool keep = e.stream == -1 ? inside(e) : r.name(e) == "Stream Wait Event" || launched_inside.count(e.index) > 0;
    if (keep) kept.push_back(i);
  }
  return kept;
}

}  // namespace kl::trace::cp
