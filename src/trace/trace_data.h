// A profiler trace held as columns: only the events the analyses read, each field one vector,
// names interned once. Times are integer nanoseconds (the trace's microseconds, read exactly
// from their decimal text), so sums and unions are exact.
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kl::trace {

using Ns = int64_t;

// Strings stored once; an id is an index into names.
class NameTable {
 public:
  uint32_t intern(std::string_view s);
  const std::string& operator[](uint32_t id) const { return names_[id]; }
  size_t size() const { return names_.size(); }

 private:
  std::deque<std::string> names_;  // a deque: growing it keeps the views in ids_ valid
  std::unordered_map<std::string_view, uint32_t> ids_;
};

enum class OpKind : uint8_t { kernel, memcpy, memset };

// The columns of events on a CUDA stream, shared by GPU ops and the other stream events.
struct StreamColumns {
  std::vector<Ns> ts, dur;
  std::vector<int64_t> device;  // args.device, else pid
  std::vector<int64_t> stream;  // args.stream, -1 when absent
  std::vector<uint32_t> name;
  size_t size() const { return ts.size(); }
  void push(Ns t, Ns d, int64_t dev, int64_t s, uint32_t n) {
    ts.push_back(t);
    dur.push_back(d);
    device.push_back(dev);
    stream.push_back(s);
    name.push_back(n);
  }
};

// GPU ops: "X" events with cat kernel, gpu_memcpy or gpu_memset.
struct GpuOps : StreamColumns {
  std::vector<int64_t> correlation;  // args.correlation, -1 when absent
  std::vector<int64_t> bytes;        // args.bytes for memcpy/memset, 0 otherwise
  std::vector<OpKind> kind;
  // Kineto's per-kernel estimates: args["blocks per SM"], args["est. achieved occupancy %"]; NaN when absent.
  std::vector<float> blocks_per_sm, occupancy_pct;
};

enum class HostKind : uint8_t { cpu_op, user_annotation, runtime, driver };

// Host-side "X" events: cpu_op, user_annotation, cuda_runtime and cuda_driver calls.
struct HostEvents {
  std::vector<Ns> ts, dur;
  std::vector<int64_t> correlation;  // runtime/driver calls; -1 otherwise
  std::vector<uint32_t> name;
  std::vector<HostKind> kind;
  size_t size() const { return ts.size(); }
};

// Other "X" events that carry a CUDA stream (cuda_sync: Stream Sync, Stream Wait Event...). HTA
// counts them as GPU time in its temporal breakdown, so that breakdown reads them too.
struct StreamEvents : StreamColumns {
  std::vector<int64_t> correlation;  // args.correlation, -1 when absent
};

// The profiler's memory instant events ("ph": "i", name "[memory]", with profile_memory=True): each
// allocation (bytes > 0) or free (bytes < 0) on a device; Addr and the allocator's totals only in
// traces from PyTorch 1.10 on (-1 when absent).
struct MemoryEvents {
  std::vector<Ns> ts;
  std::vector<int64_t> device_type, device_id;  // args "Device Type" (0 CPU, 1 CUDA), "Device Id"
  std::vector<int64_t> bytes, addr, total_allocated, total_reserved;
  size_t size() const { return ts.size(); }
};

struct TraceData {
  std::string source;  // the file name
  bool gzip = false;
  uint64_t bytes = 0;     // decompressed JSON bytes read
  uint64_t events = 0;    // elements of traceEvents
  std::map<std::string, uint64_t> categories;  // "X" events per cat, for the report on odd traces
  std::map<int64_t, std::string> device_names;  // deviceProperties[].id -> name, when given
  NameTable names;
  GpuOps gpu;
  HostEvents host;
  StreamEvents stream_events;
  MemoryEvents memory;
  uint64_t flow_correlated = 0;  // events whose correlation came from a launch flow, not args.correlation
  Ns profiler_start = 0, profiler_end = 0;  // the profiler's own "PyTorch Profiler (0)" span; 0, 0 when absent
  Ns first_api_call = INT64_MAX;  // start of the trace's first runtime or driver call, before any --steps or --window
};

}  // namespace kl::trace
