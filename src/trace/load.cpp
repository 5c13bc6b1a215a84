#include "trace/load.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

#include "kernelab/error.h"
#include "trace/event_scanner.h"
#include "trace/hta_int.h"

namespace kl::trace {

static_assert(simdjson::SIMDJSON_PADDING <= kEventPadding, "events are padded for simdjson by the scanner");

namespace od = simdjson::ondemand;

uint32_t NameTable::intern(std::string_view s) {
  if (auto it = ids_.find(s); it != ids_.end()) return it->second;
  const auto id = static_cast<uint32_t>(names_.size());
  names_.emplace_back(s);
  ids_.emplace(names_.back(), id);
  return id;
}

namespace {
constexpr Ns kMaxAbsNs = Ns{1} << 61;  // 73 years: epoch times fit, and differences of ends never overflow

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}
}  // namespace

Ns parse_us_as_ns(std::string_view text) {
  const std::string_view s = trim(text);
  auto refuse = [&](const char* why) -> Ns { bad_input(fmt::format("time value '{}' {}", s.substr(0, 40), why)); };
  size_t i = 0;
  const bool neg = i < s.size() && s[i] == '-';
  if (neg) ++i;
  if (s.find_first_of("eE") != std::string_view::npos) {  // exponent form: rare; go through a double
    double us = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), us);
    if (ec != std::errc() || end != s.data() + s.size()) return refuse("is not a number");
    const double ns = us * 1000.0;
    if (!(std::fabs(ns) <= static_cast<double>(kMaxAbsNs))) return refuse("is out of range");
    return static_cast<Ns>(std::llround(ns));
  }
  __int128 whole = 0;
  const size_t int_start = i;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    whole = whole * 10 + (s[i] - '0');
    if (whole > kMaxAbsNs) return refuse("is out of range");
  }
  if (i == int_start) return refuse("is not a number");
  __int128 ns = whole * 1000;
  if (i < s.size() && s[i] == '.') {
    ++i;
    int digits = 0;
    for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i, ++digits) {
      const int d = s[i] - '0';
      if (digits < 3) ns += d * (digits == 0 ? 100 : digits == 1 ? 10 : 1);
      else if (digits == 3 && d >= 5) ns += 1;  // the digit after the nanoseconds rounds
    }
    if (digits == 0) return refuse("is not a number");
  }
  if (i != s.size()) return refuse("is not a number");
  if (ns > kMaxAbsNs) return refuse("is out of range");
  return static_cast<Ns>(neg ? -ns : ns);
}

int64_t hta_int(od::value v, int64_t fallback) {
  od::json_type t;
  if (v.type().get(t)) return fallback;
  if (t == od::json_type::boolean) {
    bool b = false;
    return v.get_bool().get(b) ? fallback : int64_t{b};
  }
  if (t == od::json_type::number) {
    int64_t i;
    if (!v.get_int64().get(i)) return i;
    double d;
    if (!v.get_double().get(d) && std::isfinite(d) && std::fabs(d) < 9.2e18) return static_cast<int64_t>(d);
    return fallback;
  }
  if (t == od::json_type::string) {
    std::string_view s;
    if (v.get_string().get(s)) return fallback;
    int64_t i;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), i);
    return ec == std::errc() && end == s.data() + s.size() ? i : fallback;
  }
  return fallback;
}

namespace {


// A number field, NaN when it is not a finite number.
float as_float(od::value v) {
  double d;
  if (v.get_double().get(d) || !std::isfinite(d)) return std::numeric_limits<float>::quiet_NaN();
  return static_cast<float>(d);
}

enum class Cat { kernel, memcpy, memset, runtime, driver, cpu_op, user_annotation, other };

// Kineto's activity types by both of its spellings: PyTorch 1.8-1.9 ("Kernel", "Memcpy", "Memset",
// "Runtime", "Operator") and 1.10 on ("kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cpu_op").
Cat classify(std::string_view cat) {
  if (cat == "kernel" || cat == "Kernel") return Cat::kernel;
  if (cat == "gpu_memcpy" || cat == "Memcpy") return Cat::memcpy;
  if (cat == "gpu_memset" || cat == "Memset") return Cat::memset;
  if (cat == "cuda_runtime" || cat == "Runtime") return Cat::runtime;
  if (cat == "cuda_driver" || cat == "Driver") return Cat::driver;
  if (cat == "cpu_op" || cat == "Operator") return Cat::cpu_op;
  if (cat == "user_annotation") return Cat::user_annotation;
  return Cat::other;
}

struct Memory {
  int64_t device_type = -1, device_id = -1, bytes = 0, addr = -1, total_allocated = -1, total_reserved = -1;
};

struct Fields {
  bool is_x = false, is_instant = false, is_flow = false, has_cat = false, has_ts = false, has_dur = false;
  std::string_view pid_text, tid_text, id_text;  // raw tokens: where a flow event's end meets its slice
  Memory memory;
  std::string_view ts_text, dur_text;
  uint32_t cat = 0, name = 0;
  int64_t pid = -1, device = -1, stream = -1, correlation = -1, bytes = 0;
  bool has_device = false;
  float blocks_per_sm = std::numeric_limits<float>::quiet_NaN(), occupancy_pct = std::numeric_limits<float>::quiet_NaN();
};

class Loader {
 public:
  explicit Loader(TraceData& t) : t_(t) { empty_name_ = t_.names.intern(""); }

  void event(std::string_view json, size_t index) {
    ++t_.events;
    od::document doc;
    if (parser_.iterate(json.data(), json.size(), json.size() + kEventPadding).get(doc)) malformed(index, "unreadable");
    od::object obj;
    if (doc.get_object().get(obj)) malformed(index, "not an object");
    Fields f;
    f.name = empty_name_;
    for (auto field : obj) {
      std::string_view key;
      od::value v;
      if (field.unescaped_key().get(key) || field.value().get(v)) malformed(index, "unreadable member");
      if (key == "ph") {
        std::string_view ph;
        f.is_x = !v.get_string().get(ph) && ph == "X";
        f.is_instant = ph == "i" || ph == "I";
        f.is_flow = ph == "s" || ph == "f";
      } else if (key == "cat") {
        std::string_view cat;
        f.has_cat = !v.get_string().get(cat);
        if (f.has_cat) f.cat = t_.names.intern(cat);
      } else if (key == "name") {
        std::string_view name;
        if (!v.get_string().get(name)) f.name = t_.names.intern(name);
      } else if (key == "ts") {
        f.has_ts = true;
        f.ts_text = v.raw_json_token();
      } else if (key == "dur") {
        f.has_dur = true;
        f.dur_text = v.raw_json_token();
      } else if (key == "pid") {
        f.pid = hta_int(v, -1);
        f.pid_text = v.raw_json_token();
      } else if (key == "tid") {
        f.tid_text = v.raw_json_token();
      } else if (key == "id") {
        f.id_text = v.raw_json_token();
      } else if (key == "args") {
        args(v, f);
      }
    }
    if (f.is_x && f.has_cat) keep(f, index);
    if (f.is_instant && f.name == memory_name_) keep_memory(f, index);
    if (f.is_flow && f.has_cat && f.has_ts && (t_.names[f.cat] == "ac2g" || t_.names[f.cat] == "async")) keep_flow(f);
  }

  void device_properties(std::string_view json) {
    od::document doc;
    od::array arr;
    if (parser_.iterate(json.data(), json.size(), json.size() + kEventPadding).get(doc) || doc.get_array().get(arr)) return;
    for (auto item : arr) {
      od::object o;
      if (item.get(o)) continue;
      int64_t id = -1;
      std::string name;
      for (auto field : o) {
        std::string_view key, s;
        od::value v;
        if (field.unescaped_key().get(key) || field.value().get(v)) break;
        if (key == "id") id = hta_int(v, -1);
        else if (key == "name" && !v.get_string().get(s)) name = s;
      }
      if (id >= 0 && !name.empty()) t_.device_names[id] = name;
    }
  }

  void finish() {
    for (size_t id = 0; id < cat_counts_.size(); ++id)
      if (cat_counts_[id]) t_.categories[t_.names[static_cast<uint32_t>(id)]] = cat_counts_[id];
    // Events without args.correlation take the id of the launch flow ("ac2g", 1.8-1.9's "async")
    // whose end sits on them: same pid, tid and ts.
    for (const Uncorrelated& u : uncorrelated_) {
      auto it = flows_.find(u.place);
      if (it == flows_.end()) continue;
      std::vector<int64_t>& column = u.where == Where::gpu ? t_.gpu.correlation : u.where == Where::host ? t_.host.correlation
                                                                                                             : t_.stream_events.correlation;
      column[u.index] = it->second;
      ++t_.flow_correlated;
    }
  }

 private:
  [[noreturn]] void malformed(size_t index, const std::string& what) const {
    bad_input(fmt::format("invalid trace {}: traceEvents[{}]: {}", t_.source, index, what));
  }

  void args(od::value v, Fields& f) {
    od::object a;
    if (v.get_object().get(a)) return;
    for (auto field : a) {
      std::string_view key;
      od::value x;
      if (field.unescaped_key().get(key) || field.value().get(x)) return;
      if (key == "device") f.device = hta_int(x, -1), f.has_device = true;
      else if (key == "stream") f.stream = hta_int(x, -1);
      else if (key == "correlation") f.correlation = hta_int(x, -1);
      else if (key == "bytes") f.bytes = hta_int(x, 0);
      else if (key == "blocks per SM") f.blocks_per_sm = as_float(x);
      else if (key == "Device Type") f.memory.device_type = hta_int(x, -1);
      else if (key == "Device Id") f.memory.device_id = hta_int(x, -1);
      else if (key == "Bytes") f.memory.bytes = hta_int(x, 0);
      else if (key == "Addr") f.memory.addr = hta_int(x, -1);
      else if (key == "Total Allocated") f.memory.total_allocated = hta_int(x, -1);
      else if (key == "Total Reserved") f.memory.total_reserved = hta_int(x, -1);
      else if (key == "est. achieved occupancy %") f.occupancy_pct = as_float(x);
    }
  }

  Ns time_field(bool has, std::string_view text, const char* key, size_t index) const {
    if (!has) malformed(index, fmt::format("an \"X\" event without \"{}\"", key));
    try {
      return parse_us_as_ns(text);
    } catch (const BadInput& e) {
      malformed(index, fmt::format("\"{}\": {}", key, e.what()));
    }
  }

  void keep(const Fields& f, size_t index) {
    if (f.cat >= cat_counts_.size()) cat_counts_.resize(f.cat + 1);
    ++cat_counts_[f.cat];
    const Cat c = classify(t_.names[f.cat]);
    const bool on_stream = f.stream != -1;
    if (c == Cat::other && !on_stream) return;
    const Ns ts = time_field(f.has_ts, f.ts_text, "ts", index);
    const Ns dur = time_field(f.has_dur, f.dur_text, "dur", index);
    if (dur < 0) malformed(index, fmt::format("negative \"dur\" {}", f.dur_text));
    if (dur > kMaxAbsNs / 2) malformed(index, fmt::format("\"dur\" {} is out of range", f.dur_text));
    if (f.bytes > (int64_t{1} << 50)) malformed(index, fmt::format("\"bytes\" {} is out of range", f.bytes));
    const int64_t device = f.has_device ? f.device : f.pid;
    switch (c) {
      case Cat::kernel: case Cat::memcpy: case Cat::memset: {
        GpuOps& g = t_.gpu;
        remember_uncorrelated(f, ts, Where::gpu, g.size());
        g.push(ts, dur, device, f.stream, f.name);
        g.correlation.push_back(f.correlation);
        g.bytes.push_back(c == Cat::kernel ? 0 : std::max<int64_t>(f.bytes, 0));  // HTA's default for none is -1
        g.kind.push_back(c == Cat::kernel ? OpKind::kernel : c == Cat::memcpy ? OpKind::memcpy : OpKind::memset);
        g.blocks_per_sm.push_back(f.blocks_per_sm);
        g.occupancy_pct.push_back(f.occupancy_pct);
        return;
      }
      case Cat::runtime: case Cat::driver: case Cat::cpu_op: case Cat::user_annotation: {
        HostEvents& h = t_.host;
        if (c == Cat::runtime || c == Cat::driver) {
          remember_uncorrelated(f, ts, Where::host, h.size());
          t_.first_api_call = std::min(t_.first_api_call, ts);
        }
        h.ts.push_back(ts);
        h.dur.push_back(dur);
        h.correlation.push_back(f.correlation);
        h.name.push_back(f.name);
        h.kind.push_back(c == Cat::runtime  ? HostKind::runtime
                         : c == Cat::driver ? HostKind::driver
                         : c == Cat::cpu_op ? HostKind::cpu_op
                                            : HostKind::user_annotation);
        return;
      }
      case Cat::other: {
        if (t_.names[f.cat] == "Trace") {  // HTA drops the profiler's own span; the TensorBoard plugin's timeline starts there
          if (t_.names[f.name].rfind("PyTorch Profiler", 0) == 0) t_.profiler_start = ts, t_.profiler_end = ts + dur;
          return;
        }
        remember_uncorrelated(f, ts, Where::stream, t_.stream_events.size());
        t_.stream_events.push(ts, dur, device, f.stream, f.name);
        t_.stream_events.correlation.push_back(f.correlation);
        return;
      }
    }
  }

  // pid and tid as written, a string's quotes dropped: Kineto writes a thread's id as "25738" on its
  // slices and 25738 on its flow events.
  static std::string_view unquoted(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);  // raw tokens keep trailing blanks
    return s.size() >= 2 && s.front() == '"' && s.back() == '"' ? s.substr(1, s.size() - 2) : s;
  }
  static std::string place(const Fields& f, Ns ts) {
    return fmt::format("{}|{}|{}", unquoted(f.pid_text), unquoted(f.tid_text), ts);
  }
  void keep_flow(const Fields& f) {
    const std::string_view id = unquoted(f.id_text);
    int64_t v = -1;
    auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), v);
    if (ec != std::errc() || end != id.data() + id.size() || v < 0) return;
    try {
      flows_.emplace(place(f, parse_us_as_ns(f.ts_text)), v);
    } catch (const BadInput&) {  // a flow with an unreadable ts binds to nothing
    }
  }
  enum class Where { gpu, host, stream };
  void remember_uncorrelated(const Fields& f, Ns ts, Where where, size_t index) {
    if (f.correlation == -1) uncorrelated_.push_back({place(f, ts), where, index});
  }

  void keep_memory(const Fields& f, size_t index) {
    MemoryEvents& m = t_.memory;
    m.ts.push_back(time_field(f.has_ts, f.ts_text, "ts", index));
    m.device_type.push_back(f.memory.device_type), m.device_id.push_back(f.memory.device_id);
    m.bytes.push_back(f.memory.bytes), m.addr.push_back(f.memory.addr);
    m.total_allocated.push_back(f.memory.total_allocated), m.total_reserved.push_back(f.memory.total_reserved);
  }

  TraceData& t_;
  od::parser parser_;
  uint32_t empty_name_ = 0;
  uint32_t memory_name_ = t_.names.intern("[memory]");
  std::unordered_map<std::string, int64_t> flows_;  // "pid|tid|ts" of a flow end -> its id
  struct Uncorrelated {
    std::string place;
    Where where;
    size_t index;
  };
  std::vector<Uncorrelated> uncorrelated_;
  std::vector<uint64_t> cat_counts_;
};

}  // namespace

TraceData load_trace(ByteSource& src) {
  TraceData t;
  t.source = src.name();
  Loader loader(t);
  ScanCallbacks cb;
  cb.on_event = [&](std::string_view json, size_t index) { loader.event(json, index); };
  cb.on_metadata = [&](std::string_view key, std::string_view json) {
    if (key == "deviceProperties") loader.device_properties(json);
  };
  scan_trace_events(src, cb);
  loader.finish();
  t.gzip = src.gzip();
  t.bytes = src.bytes_read();
  return t;
}

TraceData load_trace_file(const std::string& path) {
  ByteSource src = ByteSource::open_file(path);
  return load_trace(src);
}

}  // namespace kl::trace
