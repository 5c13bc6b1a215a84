// The CUDA runtime API on the simulated device. Device memory is host memory from the
// allocator (so AddressSanitizer, under --memcheck, guards it); every allocation is
// registered, which lets the runtime check copies and kernel pointer arguments the way a
// GPU's MMU would, and lets the race check snapshot what kernels can write.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>
#include <unistd.h>

#include "sim/runtime/internal.h"

struct CUgraph_st {
  std::vector<kl::sim::detail::Work> work;  // in capture order
};
struct CUgraphExec_st {
  std::vector<kl::sim::detail::Work> work;
};
struct CUstream_st {
  unsigned magic = 0x5157;  // "live" mark: a destroyed or foreign handle is refused
  CUgraph_st* capture = nullptr;  // between cudaStreamBeginCapture and cudaStreamEndCapture
};
struct CUevent_st {
  unsigned magic = 0xe7e7;
  bool recorded = false;
  std::chrono::steady_clock::time_point when{};
};

namespace kl::sim::detail {
namespace {

std::mutex alloc_mutex;
std::map<const char*, Allocation> live, freed;  // by base address

// Without AddressSanitizer, each allocation is followed by guard bytes that every launch
// checks: a kernel that wrote past the end of a buffer is caught, if not the thread.
constexpr std::size_t kCanary = 256;
constexpr unsigned char kCanaryByte = 0xcd;
std::size_t canary_bytes() { return asan_present() ? 0 : kCanary; }
std::map<const void*, int> kernel_smem_limit;    // cudaFuncAttributeMaxDynamicSharedMemorySize

bool lookup(const std::map<const char*, Allocation>& m, const void* p, Allocation* out) {
  const char* c = static_cast<const char*>(p);
  auto it = m.upper_bound(c);
  if (it == m.begin()) return false;
  --it;
  // One past the end counts: kernels are passed end pointers too.
  if (c > it->second.base + it->second.bytes) return false;
  if (out) *out = it->second;
  return true;
}

cudaError_t fail(cudaError_t e, const char* api, const std::string& why) {
  std::fprintf(stderr, "kernelab sim: %s: %s (%s)\n", api, why.c_str(), cudaGetErrorName(e));
  note_message(std::string(api) + ": " + why);
  set_error(e, false);
  return e;
}

// The synchronising calls report a failed kernel, as CUDA's do.
cudaError_t sync_point() {
  const cudaError_t e = sticky_error();
  if (e != cudaSuccess) set_error(e, false);
  return e;
}

cudaError_t allocate(void** ptr, std::size_t bytes, const char* kind) {
  if (!ptr) return fail(cudaErrorInvalidValue, kind, "the result pointer is null");
  *ptr = nullptr;
  if (const cudaError_t e = sync_point(); e != cudaSuccess) return e;
  void* p = nullptr;
  // cudaMalloc aligns to 256 bytes; the size is exact so that one byte too far is outside.
  if (posix_memalign(&p, 256, (bytes ? bytes : 1) + canary_bytes()) != 0)
    return fail(cudaErrorMemoryAllocation, kind, "out of memory for " + std::to_string(bytes) + " bytes");
  std::memset(static_cast<char*>(p) + bytes, kCanaryByte, canary_bytes());
  std::lock_guard lock(alloc_mutex);
  freed.erase(static_cast<const char*>(p));
  live[static_cast<const char*>(p)] = Allocation{static_cast<const char*>(p), bytes, kind};
  *ptr = p;
  return cudaSuccess;
}

cudaError_t release(void* p, const char* api) {
  if (!p) return cudaSuccess;
  {
    std::lock_guard lock(alloc_mutex);
    auto it = live.find(static_cast<const char*>(p));
    if (it == live.end()) {
      Allocation a{};
      const bool was = lookup(freed, p, &a) && a.base == p;
      return fail(cudaErrorInvalidValue, api,
                  was ? "double free of a " + std::to_string(a.bytes) + "-byte " + a.kind + " buffer"
                      : "the pointer is not the start of a live allocation");
    }
    if (freed.size() > 4096) freed.erase(freed.begin());
    freed[it->first] = it->second;
    live.erase(it);
  }
  std::free(p);
  return sync_point();
}

// A device-side range of a copy must lie inside one allocation, as CUDA checks.
bool device_range_ok(const void* p, std::size_t bytes, const char* api, const char* role) {
  Allocation a{};
  if (!find_allocation(p, &a)) {
    char at[32];
    std::snprintf(at, sizeof at, "%p", p);
    fail(cudaErrorInvalidValue, api, std::string("the ") + role + " " + at + " is not device memory (not from cudaMalloc)");
    return false;
  }
  const std::size_t room = std::size_t(a.base + a.bytes - static_cast<const char*>(p));
  if (bytes > room) {
    fail(cudaErrorInvalidValue, api,
         std::string("the ") + role + " range of " + std::to_string(bytes) + " bytes runs " +
             std::to_string(bytes - room) + " bytes past the end of its " + std::to_string(a.bytes) + "-byte " + a.kind +
             " buffer");
    return false;
  }
  return true;
}

bool is_device(const void* p) { return find_allocation(p, nullptr); }

bool event_ok(cudaEvent_t e) { return e && e->magic == 0xe7e7; }

}  // namespace

bool find_allocation(const void* p, Allocation* out) {
  std::lock_guard lock(alloc_mutex);
  return lookup(live, p, out);
}
bool find_freed(const void* p, Allocation* out) {
  std::lock_guard lock(alloc_mutex);
  return lookup(freed, p, out);
}
std::vector<Allocation> live_allocations() {
  std::lock_guard lock(alloc_mutex);
  std::vector<Allocation> v;
  for (const auto& [base, a] : live)
    if (std::strcmp(a.kind, "__device__ symbol") != 0) v.push_back(a);
  return v;
}
// A kernel launched through a call (launch_call: a template deduced from its arguments) has no
// address here; it gets the largest limit the program set for any kernel.
std::size_t dynamic_smem_limit(const void* kernel) {
  std::lock_guard lock(alloc_mutex);
  std::size_t limit = kDefaultSmem;
  if (!kernel)
    for (const auto& [k, v] : kernel_smem_limit) limit = std::max<std::size_t>(limit, std::size_t(v));
  else if (auto it = kernel_smem_limit.find(kernel); it != kernel_smem_limit.end())
    limit = std::max<std::size_t>(limit, std::size_t(it->second));
  return limit;
}
bool stream_is_valid(cudaStream_t s) { return !s || s->magic == 0x5157; }
bool capturing(cudaStream_t s) { return s && stream_is_valid(s) && s->capture; }
cudaError_t capture(cudaStream_t s, Work work) {
  s->capture->work.push_back(std::move(work));
  return cudaSuccess;
}

void check_guard_bytes(const std::string& kernel) {
  const std::size_t guard = canary_bytes();
  if (guard == 0) return;
  std::vector<std::string> found;
  {
    std::lock_guard lock(alloc_mutex);
    for (auto& [base, a] : live) {
      if (std::strcmp(a.kind, "__device__ symbol") == 0 || std::strcmp(a.kind, "cudaHostRegister") == 0) continue;
      auto* g = const_cast<unsigned char*>(reinterpret_cast<const unsigned char*>(a.base + a.bytes));
      std::size_t first = guard, last = 0;
      for (std::size_t k = 0; k < guard; ++k)
        if (g[k] != kCanaryByte) first = std::min(first, k), last = k;
      if (first == guard) continue;
      char msg[400];
      std::snprintf(msg, sizeof msg,
                    "out-of-bounds write: kernel '%s' wrote past the end of the %zu-byte %s buffer at %p (bytes %zu..%zu "
                    "after its end); run with --memcheck to learn which thread",
                    kernel.c_str(), a.bytes, a.kind, static_cast<const void*>(a.base), first, last);
      found.emplace_back(msg);
      std::memset(g, kCanaryByte, guard);  // reported once
    }
  }
  for (const std::string& m : found) record_finding("memory", m);
  if (!found.empty()) set_error(cudaErrorIllegalAddress, true);
}

cudaError_t symbol_copy(void* dst, const void* src, size_t bytes, const char* what) {
  if (!dst || !src) return fail(cudaErrorInvalidValue, what, "the range runs past the end of the symbol");
  std::memmove(dst, src, bytes);
  return sync_point();
}
void note_symbol(const void* address, size_t bytes) {
  std::lock_guard lock(alloc_mutex);
  const char* b = static_cast<const char*>(address);
  if (!live.count(b)) live[b] = Allocation{b, bytes, "__device__ symbol"};
}

}  // namespace kl::sim::detail

using namespace kl::sim::detail;

cudaError_t kl_sim_cudaMalloc(void** ptr, size_t bytes) { return allocate(ptr, bytes, "cudaMalloc"); }
cudaError_t kl_sim_cudaMallocHost(void** ptr, size_t bytes) { return allocate(ptr, bytes, "cudaMallocHost"); }
cudaError_t kl_sim_cudaHostAlloc(void** ptr, size_t bytes, unsigned) { return allocate(ptr, bytes, "cudaMallocHost"); }
cudaError_t kl_sim_cudaMallocManaged(void** ptr, size_t bytes, unsigned) { return allocate(ptr, bytes, "cudaMallocManaged"); }
cudaError_t kl_sim_cudaFree(void* ptr) { return release(ptr, "cudaFree"); }
cudaError_t kl_sim_cudaFreeHost(void* ptr) { return release(ptr, "cudaFreeHost"); }

cudaError_t kl_sim_cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (const cudaError_t e = sync_point(); e != cudaSuccess) return e;
  if (bytes == 0) return cudaSuccess;
  if (!dst || !src) return fail(cudaErrorInvalidValue, "cudaMemcpy", "a null pointer");
  if (kind == cudaMemcpyDefault) kind = is_device(src) ? (is_device(dst) ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost)
                                                        : (is_device(dst) ? cudaMemcpyHostToDevice : cudaMemcpyHostToHost);
  const bool src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  const bool dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault) return fail(cudaErrorInvalidMemcpyDirection, "cudaMemcpy", "unknown kind");
  if (src_dev && !device_range_ok(src, bytes, "cudaMemcpy", "source")) return cudaErrorInvalidValue;
  if (dst_dev && !device_range_ok(dst, bytes, "cudaMemcpy", "destination")) return cudaErrorInvalidValue;
  std::memmove(dst, src, bytes);
  return cudaSuccess;
}
cudaError_t kl_sim_cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s) {
  if (!stream_is_valid(s)) return fail(cudaErrorInvalidResourceHandle, "cudaMemcpyAsync", "invalid stream");
  if (capturing(s)) return capture(s, [=](cudaStream_t) { return kl_sim_cudaMemcpy(dst, src, bytes, kind); });
  return kl_sim_cudaMemcpy(dst, src, bytes, kind);
}
// Rows of `width` bytes, `height` of them, each a pitch apart: row by row, with the checks of cudaMemcpy.
cudaError_t kl_sim_cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                                cudaMemcpyKind kind) {
  if (width > dpitch || width > spitch) return fail(cudaErrorInvalidPitchValue, "cudaMemcpy2D", "width is larger than a pitch");
  for (size_t r = 0; r < height; ++r)
    if (const cudaError_t e = kl_sim_cudaMemcpy(static_cast<char*>(dst) + r * dpitch, static_cast<const char*>(src) + r * spitch,
                                                width, kind);
        e != cudaSuccess)
      return e;
  return cudaSuccess;
}
cudaError_t kl_sim_cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                                     cudaMemcpyKind kind, cudaStream_t s) {
  if (!stream_is_valid(s)) return fail(cudaErrorInvalidResourceHandle, "cudaMemcpy2DAsync", "invalid stream");
  if (capturing(s))
    return capture(s, [=](cudaStream_t) { return kl_sim_cudaMemcpy2D(dst, dpitch, src, spitch, width, height, kind); });
  return kl_sim_cudaMemcpy2D(dst, dpitch, src, spitch, width, height, kind);
}
cudaError_t kl_sim_cudaMemset2D(void* dst, size_t pitch, int value, size_t width, size_t height) {
  if (width > pitch) return fail(cudaErrorInvalidPitchValue, "cudaMemset2D", "width is larger than the pitch");
  for (size_t r = 0; r < height; ++r)
    if (const cudaError_t e = kl_sim_cudaMemset(static_cast<char*>(dst) + r * pitch, value, width); e != cudaSuccess) return e;
  return cudaSuccess;
}
// Rows padded to a multiple of 512 bytes (what the GPU's texture alignment would ask).
cudaError_t kl_sim_cudaMallocPitch(void** ptr, size_t* pitch, size_t width, size_t height) {
  if (!pitch) return fail(cudaErrorInvalidValue, "cudaMallocPitch", "a null pitch");
  *pitch = (width + 511) / 512 * 512;
  return kl_sim_cudaMalloc(ptr, *pitch * height);
}
cudaError_t kl_sim_cudaMemset(void* dst, int value, size_t bytes) {
  if (const cudaError_t e = sync_point(); e != cudaSuccess) return e;
  if (bytes == 0) return cudaSuccess;
  if (!device_range_ok(dst, bytes, "cudaMemset", "destination")) return cudaErrorInvalidValue;
  std::memset(dst, value, bytes);
  return cudaSuccess;
}
cudaError_t kl_sim_cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t s) {
  if (!stream_is_valid(s)) return fail(cudaErrorInvalidResourceHandle, "cudaMemsetAsync", "invalid stream");
  if (capturing(s)) return capture(s, [=](cudaStream_t) { return kl_sim_cudaMemset(dst, value, bytes); });
  return kl_sim_cudaMemset(dst, value, bytes);
}
cudaError_t kl_sim_cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  const size_t total = size_t(sysconf(_SC_PHYS_PAGES)) * size_t(sysconf(_SC_PAGESIZE));
  if (total_bytes) *total_bytes = total;
  if (free_bytes) *free_bytes = size_t(sysconf(_SC_AVPHYS_PAGES)) * size_t(sysconf(_SC_PAGESIZE));
  return cudaSuccess;
}

cudaError_t kl_sim_cudaDeviceSynchronize() { return sync_point(); }
cudaError_t kl_sim_cudaDeviceReset() {
  std::vector<void*> mine;
  {
    std::lock_guard lock(alloc_mutex);
    for (auto& [base, a] : live)
      if (std::strcmp(a.kind, "__device__ symbol") != 0) mine.push_back(const_cast<char*>(base));
    live.clear(), freed.clear(), kernel_smem_limit.clear();
  }
  for (void* p : mine) std::free(p);
  reset_errors();
  return cudaSuccess;
}
cudaError_t kl_sim_cudaGetLastError() { return take_last_error(true); }
cudaError_t kl_sim_cudaPeekAtLastError() { return take_last_error(false); }

cudaError_t kl_sim_cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}
cudaError_t kl_sim_cudaSetDevice(int device) {
  return device == 0 ? cudaSuccess : fail(cudaErrorInvalidDevice, "cudaSetDevice", "the simulator has one device, 0");
}
cudaError_t kl_sim_cudaGetDevice(int* device) {
  *device = 0;
  return cudaSuccess;
}
cudaError_t kl_sim_cudaDriverGetVersion(int* v) {
  *v = CUDART_VERSION;
  return cudaSuccess;
}
cudaError_t kl_sim_cudaRuntimeGetVersion(int* v) {
  *v = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t kl_sim_cudaEventCreate(cudaEvent_t* event) {
  *event = new CUevent_st();
  return cudaSuccess;
}
cudaError_t kl_sim_cudaEventCreateWithFlags(cudaEvent_t* event, unsigned) { return kl_sim_cudaEventCreate(event); }
cudaError_t kl_sim_cudaEventRecord(cudaEvent_t event, cudaStream_t s) {
  if (!event_ok(event)) return fail(cudaErrorInvalidResourceHandle, "cudaEventRecord", "invalid event");
  if (!stream_is_valid(s)) return fail(cudaErrorInvalidResourceHandle, "cudaEventRecord", "invalid stream");
  event->recorded = true, event->when = std::chrono::steady_clock::now();  // the work before it is done
  return cudaSuccess;
}
cudaError_t kl_sim_cudaEventSynchronize(cudaEvent_t event) {
  if (!event_ok(event)) return fail(cudaErrorInvalidResourceHandle, "cudaEventSynchronize", "invalid event");
  return sync_point();
}
cudaError_t kl_sim_cudaEventQuery(cudaEvent_t event) {
  return event_ok(event) ? cudaSuccess : fail(cudaErrorInvalidResourceHandle, "cudaEventQuery", "invalid event");
}
cudaError_t kl_sim_cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (!event_ok(start) || !event_ok(end)) return fail(cudaErrorInvalidResourceHandle, "cudaEventElapsedTime", "invalid event");
  if (!start->recorded || !end->recorded)
    return fail(cudaErrorInvalidResourceHandle, "cudaEventElapsedTime", "an event was not recorded");
  static std::once_flag told;  // nobody should quote a simulated bandwidth
  std::call_once(told, [] {
    std::fprintf(stderr,
                 "kernelab sim: cudaEventElapsedTime gives this host's time to simulate the work, not a GPU's: "
                 "do not quote it as a kernel time or bandwidth\n");
  });
  *ms = std::chrono::duration<float, std::milli>(end->when - start->when).count();
  return cudaSuccess;
}
cudaError_t kl_sim_cudaEventDestroy(cudaEvent_t event) {
  if (!event_ok(event)) return fail(cudaErrorInvalidResourceHandle, "cudaEventDestroy", "invalid event");
  event->magic = 0;
  delete event;
  return cudaSuccess;
}

cudaError_t kl_sim_cudaStreamCreate(cudaStream_t* stream) {
  *stream = new CUstream_st();
  return cudaSuccess;
}
cudaError_t kl_sim_cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned) { return kl_sim_cudaStreamCreate(stream); }
cudaError_t kl_sim_cudaStreamSynchronize(cudaStream_t s) {
  if (!stream_is_valid(s)) return fail(cudaErrorInvalidResourceHandle, "cudaStreamSynchronize", "invalid stream");
  if (capturing(s)) return fail(cudaErrorStreamCaptureUnsupported, "cudaStreamSynchronize", "the stream is being captured");
  return sync_point();
}
cudaError_t kl_sim_cudaStreamQuery(cudaStream_t s) {
  return stream_is_valid(s) ? cudaSuccess : fail(cudaErrorInvalidResourceHandle, "cudaStreamQuery", "invalid stream");
}
cudaError_t kl_sim_cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned) {
  if (!stream_is_valid(s) || !event_ok(e)) return fail(cudaErrorInvalidResourceHandle, "cudaStreamWaitEvent", "invalid handle");
  return cudaSuccess;
}
cudaError_t kl_sim_cudaStreamDestroy(cudaStream_t s) {
  if (!s || !stream_is_valid(s)) return fail(cudaErrorInvalidResourceHandle, "cudaStreamDestroy", "invalid stream");
  s->magic = 0;
  delete s;
  return cudaSuccess;
}

// CUDA Graphs by stream capture: the launches, copies and sets issued to a capturing stream
// are recorded; cudaGraphLaunch runs them in capture order (a captured stream is in order).
cudaError_t kl_sim_cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode) {
  if (!s) return fail(cudaErrorStreamCaptureUnsupported, "cudaStreamBeginCapture", "the legacy default stream cannot be captured");
  if (!stream_is_valid(s)) return fail(cudaErrorInvalidResourceHandle, "cudaStreamBeginCapture", "invalid stream");
  if (s->capture) return fail(cudaErrorIllegalState, "cudaStreamBeginCapture", "the stream is already being captured");
  s->capture = new CUgraph_st();
  return cudaSuccess;
}
cudaError_t kl_sim_cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* graph) {
  if (!s || !stream_is_valid(s)) return fail(cudaErrorInvalidResourceHandle, "cudaStreamEndCapture", "invalid stream");
  if (!s->capture) return fail(cudaErrorIllegalState, "cudaStreamEndCapture", "the stream is not being captured");
  *graph = s->capture;
  s->capture = nullptr;
  return cudaSuccess;
}
cudaError_t kl_sim_cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  if (!graph) return fail(cudaErrorInvalidValue, "cudaGraphInstantiate", "null graph");
  *exec = new CUgraphExec_st{graph->work};
  return cudaSuccess;
}
cudaError_t kl_sim_cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s) {
  if (!exec) return fail(cudaErrorInvalidValue, "cudaGraphLaunch", "null graph exec");
  if (!stream_is_valid(s)) return fail(cudaErrorInvalidResourceHandle, "cudaGraphLaunch", "invalid stream");
  for (const Work& w : exec->work)
    if (const cudaError_t e = w(s); e != cudaSuccess) return e;
  return cudaSuccess;
}
cudaError_t kl_sim_cudaGraphDestroy(cudaGraph_t graph) {
  delete graph;
  return cudaSuccess;
}
cudaError_t kl_sim_cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete exec;
  return cudaSuccess;
}

cudaError_t kl_sim_cudaFuncSetAttribute_impl(const void* func, cudaFuncAttribute attr, int value) {
  if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
    if (value < 0 || size_t(value) > sim_device().smem_optin)
      return fail(cudaErrorInvalidValue, "cudaFuncSetAttribute",
                  std::to_string(value) + " bytes exceed the device's " + std::to_string(sim_device().smem_optin) +
                      " per block");
    std::lock_guard lock(alloc_mutex);
    kernel_smem_limit[func] = value;
  }
  return cudaSuccess;  // the other attributes (carveout...) do not change a simulation
}

// ---- Calls that change nothing a simulation shows -------------------------------------------

namespace {
unsigned device_flags = 0;
std::map<cudaLimit, size_t> limits;
}  // namespace

cudaError_t kl_sim_cudaSetDeviceFlags(unsigned flags) {
  device_flags = flags;
  return cudaSuccess;
}
cudaError_t kl_sim_cudaDeviceCanAccessPeer(int* can, int device, int peer) {
  if (!can || device != 0 || peer != 0) return fail(cudaErrorInvalidDevice, "cudaDeviceCanAccessPeer", "the simulator has one device");
  *can = 0;
  return cudaSuccess;
}
cudaError_t kl_sim_cudaGetDeviceFlags(unsigned* flags) {
  if (!flags) return fail(cudaErrorInvalidValue, "cudaGetDeviceFlags", "the result pointer is null");
  *flags = device_flags;
  return cudaSuccess;
}
cudaError_t kl_sim_cudaDeviceSetLimit(cudaLimit limit, size_t value) {
  std::lock_guard lock(alloc_mutex);
  limits[limit] = value;
  return cudaSuccess;
}
cudaError_t kl_sim_cudaDeviceGetLimit(size_t* value, cudaLimit limit) {
  if (!value) return fail(cudaErrorInvalidValue, "cudaDeviceGetLimit", "the result pointer is null");
  std::lock_guard lock(alloc_mutex);
  auto it = limits.find(limit);
  if (it == limits.end()) return fail(cudaErrorInvalidValue, "cudaDeviceGetLimit", "the simulator knows only limits the program set");
  *value = it->second;
  return cudaSuccess;
}
cudaError_t kl_sim_cudaHostRegister(void* ptr, size_t bytes, unsigned) {
  if (!ptr || bytes == 0) return fail(cudaErrorInvalidValue, "cudaHostRegister", "a null pointer or 0 bytes");
  std::lock_guard lock(alloc_mutex);
  const char* b = static_cast<const char*>(ptr);
  if (live.count(b)) return fail(cudaErrorHostMemoryAlreadyRegistered, "cudaHostRegister", "the range is registered already");
  live[b] = Allocation{b, bytes, "cudaHostRegister"};
  return cudaSuccess;
}
cudaError_t kl_sim_cudaHostUnregister(void* ptr) {
  std::lock_guard lock(alloc_mutex);
  auto it = live.find(static_cast<const char*>(ptr));
  if (it == live.end() || std::strcmp(it->second.kind, "cudaHostRegister") != 0)
    return fail(cudaErrorHostMemoryNotRegistered, "cudaHostUnregister", "the pointer was not registered");
  live.erase(it);
  return cudaSuccess;
}
cudaError_t kl_sim_cudaHostGetDevicePointer(void** device, void* host, unsigned) {
  Allocation a{};
  if (!device || !find_allocation(host, &a) || std::strcmp(a.kind, "cudaMalloc") == 0)
    return fail(cudaErrorInvalidValue, "cudaHostGetDevicePointer", "the pointer is not pinned or registered host memory");
  *device = host;  // one address space here
  return cudaSuccess;
}
cudaError_t kl_sim_cudaStreamAddCallback(cudaStream_t s, cudaStreamCallback_t callback, void* user, unsigned) {
  if (!stream_is_valid(s) || !callback) return fail(cudaErrorInvalidValue, "cudaStreamAddCallback", "invalid stream or callback");
  callback(s, sticky_error(), user);  // the stream's earlier work is done: all work runs at once
  return cudaSuccess;
}
cudaError_t kl_sim_cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void* user) {
  if (!stream_is_valid(s) || !fn) return fail(cudaErrorInvalidValue, "cudaLaunchHostFunc", "invalid stream or function");
  if (capturing(s)) return capture(s, [fn, user](cudaStream_t) { fn(user); return cudaSuccess; });
  fn(user);
  return cudaSuccess;
}
cudaError_t kl_sim_cudaProfilerStart() { return cudaSuccess; }
cudaError_t kl_sim_cudaProfilerStop() { return cudaSuccess; }
cudaError_t kl_sim_cudaStreamSetAttribute(cudaStream_t s, cudaStreamAttrID, const cudaStreamAttrValue*) {
  return stream_is_valid(s) ? cudaSuccess : fail(cudaErrorInvalidResourceHandle, "cudaStreamSetAttribute", "invalid stream");
}
cudaError_t kl_sim_cudaCtxResetPersistingL2Cache() { return cudaSuccess; }
cudaError_t kl_sim_cudaStreamAttachMemAsync(cudaStream_t s, void*, size_t, unsigned) {
  return stream_is_valid(s) ? cudaSuccess : fail(cudaErrorInvalidResourceHandle, "cudaStreamAttachMemAsync", "invalid stream");
}
cudaError_t kl_sim_cudaMemPrefetchAsync(const void* ptr, size_t bytes, cudaMemLocation, unsigned, cudaStream_t s) {
  if (!stream_is_valid(s)) return fail(cudaErrorInvalidResourceHandle, "cudaMemPrefetchAsync", "invalid stream");
  return device_range_ok(ptr, bytes, "cudaMemPrefetchAsync", "range") ? cudaSuccess : cudaErrorInvalidValue;
}
cudaError_t kl_sim_cudaMemAdvise(const void* ptr, size_t bytes, cudaMemoryAdvise, cudaMemLocation) {
  return device_range_ok(ptr, bytes, "cudaMemAdvise", "range") ? cudaSuccess : cudaErrorInvalidValue;
}
