#include "trace/cupti_tracer.h"

#include <fmt/format.h>

#include "kernelab/error.h"

#ifdef KERNELAB_HAVE_CUPTI
#include <cuda_runtime.h>
#include <cupti.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <vector>
#endif

namespace kl::trace {

#ifndef KERNELAB_HAVE_CUPTI

std::unique_ptr<CuptiTracer> CuptiTracer::start() {
  runtime_failure("--trace needs the CUPTI tracer, and this kernelab was built without the CUDA backend (no nvcc or no CUPTI "
                  "in the toolkit): no trace written");
}
CuptiTracer::~CuptiTracer() = default;
size_t CuptiTracer::stop_and_write(const std::string&) { return 0; }

#else

namespace {

void check(CUptiResult rc, const char* what) {
  if (rc == CUPTI_SUCCESS) return;
  const char* msg = nullptr;
  cuptiGetResultString(rc, &msg);
  runtime_failure(fmt::format("CUPTI {} failed: {}", what, msg ? msg : "unknown error"));
}

// One Chrome trace event, already in Kineto's layout; `args` is JSON text without braces.
struct Event {
  std::string cat, name, args;
  int64_t pid = 0, tid = 0;
  uint64_t start_ns = 0, end_ns = 0;
};

// Records arrive on CUPTI's threads through C callbacks, so the state is global.
struct Recorder {
  std::mutex mu;
  std::vector<Event> events;
  std::map<uint32_t, uint32_t> context_device;  // contextId -> deviceId, from kernel and copy records
  std::map<uint32_t, Event> open_markers;        // NVTX ranges started and not yet ended, by id
};
Recorder& recorder() {
  static Recorder r;
  return r;
}

constexpr size_t kBufferBytes = 8 << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

std::string json_string(const char* s) { return nlohmann::json(std::string(s ? s : "")).dump(); }

// "Memcpy HtoD (Pageable -> Device)", as Kineto names copies.
std::string memcpy_name(uint8_t copy_kind, uint8_t src, uint8_t dst) {
  static const char* kinds[] = {"Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"};
  static const char* mem[] = {"Unknown", "Pageable", "Pinned", "Device", "Array", "Managed", "Device Static", "Managed Static"};
  auto at = [](const char* const* names, size_t n, uint8_t i) { return i < n ? names[i] : "Unknown"; };
  return fmt::format("Memcpy {} ({} -> {})", at(kinds, 11, copy_kind), at(mem, 8, src), at(mem, 8, dst));
}

const char* sync_name(CUpti_ActivitySynchronizationType t) {
  switch (t) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return "Event Sync";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return "Stream Wait Event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return "Stream Sync";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return "Context Sync";
    default: return "Unknown Sync";
  }
}

// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel", as Kineto writes runtime calls.
std::string api_name(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  const char* raw = nullptr;
  if (cuptiGetCallbackName(domain, cbid, &raw) != CUPTI_SUCCESS || !raw) return fmt::format("cbid {}", cbid);
  std::string n = raw;
  if (auto v = n.rfind("_v"); v != std::string::npos && v + 2 < n.size() && n.find_first_not_of("0123456789", v + 2) == std::string::npos)
    n.resize(v);
  return n;
}

void record(Recorder& r, const CUpti_Activity* a) {
  Event e;
  switch (a->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(a);
      r.context_device[k->contextId] = k->deviceId;
      e = {"kernel", k->name ? k->name : "", "", k->deviceId, k->streamId, k->start, k->end};
      e.args = fmt::format(R"("device": {}, "context": {}, "stream": {}, "correlation": {}, "registers per thread": {}, )"
                           R"("shared memory": {}, "grid": [{}, {}, {}], "block": [{}, {}, {}])",
                           k->deviceId, k->contextId, k->streamId, k->correlationId, k->registersPerThread,
                           k->staticSharedMemory + k->dynamicSharedMemory, k->gridX, k->gridY, k->gridZ, k->blockX, k->blockY, k->blockZ);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(a);
      r.context_device[m->contextId] = m->deviceId;
      e = {"gpu_memcpy", memcpy_name(m->copyKind, m->srcKind, m->dstKind), "", m->deviceId, m->streamId, m->start, m->end};
      e.args = fmt::format(R"("device": {}, "context": {}, "stream": {}, "correlation": {}, "bytes": {})", m->deviceId,
                           m->contextId, m->streamId, m->correlationId, m->bytes);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(a);
      e = {"gpu_memset", "Memset (Device)", "", m->deviceId, m->streamId, m->start, m->end};
      e.args = fmt::format(R"("device": {}, "context": {}, "stream": {}, "correlation": {}, "bytes": {})", m->deviceId,
                           m->contextId, m->streamId, m->correlationId, m->bytes);
      break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto* api = reinterpret_cast<const CUpti_ActivityAPI*>(a);
      const bool runtime = a->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
      e = {runtime ? "cuda_runtime" : "cuda_driver",
           api_name(runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API, api->cbid), "", api->processId,
           api->threadId, api->start, api->end};
      e.args = fmt::format(R"("cbid": {}, "correlation": {})", api->cbid, api->correlationId);
      break;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto* s = reinterpret_cast<const CUpti_ActivitySynchronization2*>(a);
      const uint32_t device = r.context_device.count(s->contextId) ? r.context_device[s->contextId] : 0;
      const int64_t stream = s->type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE ? -1 : s->streamId;
      e = {"cuda_sync", sync_name(s->type), "", device, stream, s->start, s->end};
      e.args = fmt::format(R"("device": {}, "context": {}, "stream": {}, "correlation": {}, "cuda_sync_kind": "{}")", device,
                           s->contextId, stream, s->correlationId, sync_name(s->type));
      break;
    }
    case CUPTI_ACTIVITY_KIND_MARKER: {  // NVTX push/pop: a start record (with the name) and an end record
      const auto* m = reinterpret_cast<const CUpti_ActivityMarker2*>(a);
      if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
        r.open_markers[m->id] = {"user_annotation", m->name ? m->name : "", "", m->objectId.pt.processId, m->objectId.pt.threadId,
                                 m->timestamp, m->timestamp};
      } else if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
        auto it = r.open_markers.find(m->id);
        if (it == r.open_markers.end()) return;
        e = std::move(it->second);
        e.end_ns = m->timestamp;
        r.open_markers.erase(it);
        break;
      }
      return;
    }
    default: return;
  }
  r.events.push_back(std::move(e));
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  Recorder& r = recorder();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    CUpti_Activity* a = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid, &a) == CUPTI_SUCCESS) record(r, a);
  }
  std::free(buffer);
}

constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                         CUPTI_ACTIVITY_KIND_MEMSET,            CUPTI_ACTIVITY_KIND_RUNTIME,
                                         CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,   CUPTI_ACTIVITY_KIND_MARKER};

// Microseconds with the nanoseconds as three exact decimals, as Kineto writes them.
std::string us_text(uint64_t ns) { return fmt::format("{}.{:03}", ns / 1000, ns % 1000); }

}  // namespace

std::unique_ptr<CuptiTracer> CuptiTracer::start() {
  int devices = 0;
  const cudaError_t err = cudaGetDeviceCount(&devices);
  if (err != cudaSuccess || devices == 0)
    runtime_failure(fmt::format("--trace records a GPU's activity, and no GPU is here (cudaGetDeviceCount: {}): no trace written",
                                err != cudaSuccess ? cudaGetErrorString(err) : "0 devices"));
  // NVTX ranges reach CUPTI only through NVTX's injection hook: point it at the CUPTI library in
  // use, before the first range is pushed.
  Dl_info info{};
  if (!std::getenv("NVTX_INJECTION64_PATH") && dladdr(reinterpret_cast<void*>(&cuptiActivityEnable), &info) && info.dli_fname)
    setenv("NVTX_INJECTION64_PATH", info.dli_fname, 0);
  check(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks");
  for (CUpti_ActivityKind k : kKinds) check(cuptiActivityEnable(k), "cuptiActivityEnable");
  std::unique_ptr<CuptiTracer> t(new CuptiTracer());
  t->running_ = true;
  return t;
}

CuptiTracer::~CuptiTracer() {
  if (!running_) return;
  cuptiActivityFlushAll(1);
  for (CUpti_ActivityKind k : kKinds) cuptiActivityDisable(k);
}

size_t CuptiTracer::stop_and_write(const std::string& path) {
  cudaDeviceSynchronize();
  check(cuptiActivityFlushAll(1), "cuptiActivityFlushAll");
  for (CUpti_ActivityKind k : kKinds) cuptiActivityDisable(k);
  running_ = false;
  Recorder& r = recorder();
  std::lock_guard<std::mutex> lock(r.mu);
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) bad_input(fmt::format("cannot write the trace file '{}'", path));
  std::string out = R"({"schemaVersion": 1, "traceName": "kernelab bench, recorded by CUPTI", "deviceProperties": [)";
  int devices = 0;
  cudaGetDeviceCount(&devices);
  for (int d = 0; d < devices; ++d) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, d) != cudaSuccess) continue;
    out += fmt::format(R"({}{{"id": {}, "name": {}, "computeMajor": {}, "computeMinor": {}, "numSms": {}}})", d ? ", " : "", d,
                       json_string(p.name), p.major, p.minor, p.multiProcessorCount);
  }
  out += R"(], "traceEvents": [)";
  out += fmt::format(R"({{"ph": "M", "name": "process_name", "pid": {}, "tid": 0, "args": {{"name": "kernelab"}}}})", getpid());
  for (const Event& e : r.events) {
    out += fmt::format(R"(,
{{"ph": "X", "cat": "{}", "name": {}, "pid": {}, "tid": {}, "ts": {}, "dur": {}, "args": {{{}}}}})",
                       e.cat, json_string(e.name.c_str()), e.pid, e.tid, us_text(e.start_ns),
                       us_text(e.end_ns > e.start_ns ? e.end_ns - e.start_ns : 0), e.args);
    if (out.size() > (1 << 20)) std::fputs(out.c_str(), f), out.clear();
  }
  out += "\n]}\n";
  std::fputs(out.c_str(), f);
  const bool ok = std::fclose(f) == 0;
  if (!ok) runtime_failure(fmt::format("writing the trace file '{}' failed", path));
  const size_t n = r.events.size();
  r.events.clear();
  return n;
}

#endif

}  // namespace kl::trace
