// The events `trace analyze` needs from each rank's trace when given several (ranks.h): one pass
// of the streaming scanner, simdjson On-Demand on each event, as load.cpp reads a single trace.
#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <filesystem>

#include "kernelab/error.h"
#include "trace/analysis.h"
#include "trace/event_scanner.h"
#include "trace/load.h"
#include "trace/ranks.h"

namespace kl::trace {

namespace od = simdjson::ondemand;

namespace {

bool host_collective(std::string_view name) {
  return name.starts_with("kernelab:") || name.starts_with("gloo:") || name.starts_with("mpi:");
}

// Host events that belong to the collectives rather than to compute.
bool collective_wrapper(std::string_view name) {
  return host_collective(name) || name.starts_with("nccl:") || name.starts_with("c10d::") || name == "record_param_comms";
}

struct RankEvent {
  std::string_view ph, cat, name, ts, dur;
  int64_t seq = -1;
};

std::string_view string_or_empty(od::value v) {
  std::string_view s;
  return v.get_string().get(s) ? std::string_view() : s;
}

RankEvent read_event(od::parser& parser, std::string_view json, size_t index, const std::string& source) {
  auto malformed = [&](const char* why) {
    bad_input(fmt::format("{}: traceEvents[{}] is {}", source, index, why));
  };
  od::document doc;
  od::object obj;
  if (parser.iterate(json.data(), json.size(), json.size() + kEventPadding).get(doc) || doc.get_object().get(obj))
    malformed("not an object");
  RankEvent e;
  for (auto field : obj) {
    std::string_view key;
    od::value v;
    if (field.unescaped_key().get(key) || field.value().get(v)) malformed("unreadable");
    if (key == "ph") e.ph = string_or_empty(v);
    else if (key == "cat") e.cat = string_or_empty(v);
    else if (key == "name") e.name = string_or_empty(v);
    else if (key == "ts") e.ts = v.raw_json_token();
    else if (key == "dur") e.dur = v.raw_json_token();
    else if (key == "args") {
      od::object args;
      if (v.get_object().get(args)) continue;
      for (auto a : args) {
        std::string_view k;
        od::value av;
        if (a.unescaped_key().get(k) || a.value().get(av)) break;
        int64_t seq;
        if (k == "seq" && !av.get_int64().get(seq)) e.seq = seq;
      }
    }
  }
  return e;
}

}  // namespace

RankTrace load_rank_trace(const std::string& path) {
  ByteSource src = ByteSource::open_file(path);
  RankTrace t;
  t.source = path;
  od::parser parser, meta_parser;
  std::vector<CommEvent> gpu_comm, host_comm;
  std::vector<Interval> gpu_compute, host_compute;
  bool kernels = false;
  ScanCallbacks cb;
  // Views into the event's text: copied (names) or converted (times) before the next event.
  cb.on_event = [&](std::string_view json, size_t index) {
    const RankEvent e = read_event(parser, json, index, path);
    if (e.ph != "X" || e.ts.empty() || e.dur.empty()) return;
    const Ns start = parse_us_as_ns(e.ts), end = start + parse_us_as_ns(e.dur);
    if (e.cat == "kernel" || e.cat == "Kernel") {
      kernels = true;
      const KernelType k = hta_kernel_type(e.name);
      if (k == KernelType::communication) gpu_comm.push_back({start, end, std::string(e.name), e.seq});
      else if (k == KernelType::computation) gpu_compute.push_back({start, end});
    } else if (e.cat == "cpu_op" || e.cat == "Operator" || e.cat == "user_annotation") {
      if (host_collective(e.name)) host_comm.push_back({start, end, std::string(e.name), e.seq});
      else if (e.cat != "user_annotation" && !collective_wrapper(e.name)) host_compute.push_back({start, end});
    }
  };
  cb.on_metadata = [&](std::string_view key, std::string_view json) {
    if (key != "distributedInfo") return;
    od::document doc;
    od::object o;
    if (meta_parser.iterate(json.data(), json.size(), json.size() + kEventPadding).get(doc) || doc.get_object().get(o)) return;
    int64_t rank;
    if (!o["rank"].get_int64().get(rank)) t.rank = rank;
  };
  scan_trace_events(src, cb);
  t.gpu = kernels;
  t.comm = kernels ? std::move(gpu_comm) : std::move(host_comm);
  t.compute = kernels ? std::move(gpu_compute) : std::move(host_compute);
  std::stable_sort(t.comm.begin(), t.comm.end(), [](const CommEvent& a, const CommEvent& b) { return a.start < b.start; });
  return t;
}

std::vector<std::string> rank_trace_files(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  for (const std::string& a : args) {
    if (!std::filesystem::is_directory(a)) {
      files.push_back(a);
      continue;
    }
    std::vector<std::string> found;
    for (const auto& e : std::filesystem::directory_iterator(a)) {
      const std::string name = e.path().filename().string();
      if (e.is_regular_file() && (name.ends_with(".json") || name.ends_with(".json.gz"))) found.push_back(e.path().string());
    }
    if (found.empty()) bad_input(fmt::format("{}: a folder with no .json or .json.gz trace", a));
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  return files;
}

}  // namespace kl::trace
