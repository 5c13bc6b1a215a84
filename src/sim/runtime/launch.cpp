// A launch: checks CUDA would make (configuration, shared memory, pointer arguments), then
// blocks handed out to a pool of OS threads, and the race check that runs a launch twice.
// Problems found are "findings": printed to stderr, counted, and appended to the file that
// KERNELAB_SIM_FINDINGS names (how `kernelab sim run` learns that a program must fail).
#include <cxxabi.h>
#include <dlfcn.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "sim/runtime/internal.h"
#include "sim/runtime/profile_internal.h"
#include "sim/profile.h"

namespace kl::sim::detail {
namespace {

std::mutex state_mutex;  // findings, errors
std::string last_msg;
int finding_count = 0;
cudaError_t last_error = cudaSuccess, sticky = cudaSuccess;

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

// OS threads that run blocks: the launching thread plus helpers, kept across launches.
class Pool {
 public:
  void run(unsigned n, const std::function<void()>& job) {
    std::unique_lock lock(m_);
    while (helpers_.size() + 1 < n) helpers_.emplace_back([this, i = helpers_.size()] { loop(i); });
    job_ = &job, wanted_ = n - 1, pending_ = n - 1, ++generation_;
    wake_.notify_all();
    lock.unlock();
    job();
    lock.lock();
    done_.wait(lock, [&] { return pending_ == 0; });
  }

 private:
  void loop(std::size_t index) {
    unsigned long long seen = 0;
    std::unique_lock lock(m_);
    for (;;) {
      wake_.wait(lock, [&] { return generation_ != seen; });
      seen = generation_;
      if (index >= wanted_) continue;
      const auto* job = job_;
      lock.unlock();
      (*job)();
      lock.lock();
      if (--pending_ == 0) done_.notify_all();
    }
  }
  std::mutex m_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> helpers_;
  const std::function<void()>* job_ = nullptr;
  std::size_t wanted_ = 0, pending_ = 0;
  unsigned long long generation_ = 0;
};
Pool& pool() {
  static Pool* p = new Pool();  // never destroyed: its threads block until the process ends
  return *p;
}

// Default: the cores, at most 16. Each OS thread keeps a guard-paged stack per simulated
// thread (two memory mappings each), and the kernel allows about 65k mappings a process.
unsigned os_threads() {
  unsigned n = options().os_threads;
  if (n == 0) n = std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
  return n;
}

void execute(Launch& L) {
  const bool serial = options().serial || L.profiled;
  const std::function<void()> job = [&L, serial] {
    Worker& w = worker();
    prepare(w, L);
    for (unsigned long long b; !L.failed && (b = L.next++) < L.blocks;)
      run_block(w, L, serial && L.order == Order::reverse ? L.blocks - 1 - b : b);
    w.launch = nullptr;
  };
  const unsigned n = serial ? 1 : unsigned(std::min<unsigned long long>(os_threads(), L.blocks));
  if (n <= 1) job();
  else pool().run(n, job);
}

std::string kernel_name(const Kernel& k) {
  if (k.name) return k.name;
  Dl_info info{};
  if (dladdr(k.address, &info) && info.dli_sname && info.dli_saddr == k.address) {
    int status = 0;
    char* d = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
    std::string n = status == 0 && d ? d : info.dli_sname;
    std::free(d);
    return n.substr(0, n.find('('));
  }
  char b[32];
  std::snprintf(b, sizeof b, "kernel@%p", k.address);
  return b;
}

cudaError_t refuse(cudaError_t e, const std::string& name, const std::string& why) {
  std::fprintf(stderr, "kernelab sim: launch of kernel '%s' refused (%s): %s\n", name.c_str(), cudaGetErrorName(e),
               why.c_str());
  note_message("launch of kernel '" + name + "' refused: " + why);
  set_error(e, false);
  return e;
}

// The limits of the simulated device (H100): what CUDA itself refuses at launch.
cudaError_t check_config(const std::string& name, const void* kernel, dim3 g, dim3 b, std::size_t smem) {
  const unsigned long long threads = 1ull * b.x * b.y * b.z;
  if (b.x == 0 || b.y == 0 || b.z == 0 || g.x == 0 || g.y == 0 || g.z == 0)
    return refuse(cudaErrorInvalidConfiguration, name, "a grid or block dimension is 0: grid " + dim_text(g) + ", block " + dim_text(b));
  if (threads > 1024)
    return refuse(cudaErrorInvalidConfiguration, name,
                  std::to_string(threads) + " threads per block (block " + dim_text(b) + ") exceed the limit of 1024");
  if (b.x > 1024 || b.y > 1024 || b.z > 64)
    return refuse(cudaErrorInvalidConfiguration, name, "block " + dim_text(b) + " exceeds the per-dimension limits (1024,1024,64)");
  if (g.x > 2147483647u || g.y > 65535 || g.z > 65535)
    return refuse(cudaErrorInvalidConfiguration, name, "grid " + dim_text(g) + " exceeds the limits (2147483647,65535,65535)");
  if (smem > sim_device().smem_optin)
    return refuse(cudaErrorInvalidValue, name,
                  std::to_string(smem) + " bytes of dynamic shared memory exceed the device's " +
                      std::to_string(sim_device().smem_optin) + " per block");
  if (smem > dynamic_smem_limit(kernel))
    return refuse(cudaErrorInvalidValue, name,
                  std::to_string(smem) + " bytes of dynamic shared memory exceed " + std::to_string(dynamic_smem_limit(kernel)) +
                      "; above 48 KiB a kernel needs cudaFuncSetAttribute(kernel, "
                      "cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) first");
  return cudaSuccess;
}

// A pointer argument that no allocation contains would fault on a GPU.
bool check_pointers(const Kernel& k, const std::string& name) {
  if (!options().check_pointer_args) return true;
  for (const PointerArg& a : k.pointer_args) {
    Allocation al{};
    if (!a.ptr || find_allocation(a.ptr, &al)) continue;
    char msg[512];
    if (find_freed(a.ptr, &al))
      std::snprintf(msg, sizeof msg,
                    "use after free: argument %u of kernel '%s' points into a %zu-byte %s buffer that was freed", a.index,
                    name.c_str(), al.bytes, al.kind);
    else
      std::snprintf(msg, sizeof msg,
                    "invalid pointer: argument %u of kernel '%s' is %p, which no cudaMalloc/cudaMallocHost allocation "
                    "contains (a host pointer? a GPU would fault on it)",
                    a.index, name.c_str(), a.ptr);
    record_finding("memory", msg);
    set_error(cudaErrorIllegalAddress, true);
    return false;
  }
  return true;
}

cudaError_t run(const Kernel& k, const std::string& name, dim3 grid, dim3 block, std::size_t smem) {
  Launch L;
  L.kernel = &k, L.name = name, L.grid = grid, L.block = block, L.smem = smem, L.order = options().order;
  L.threads = block.x * block.y * block.z;
  L.blocks = 1ull * grid.x * grid.y * grid.z;
  L.profiled = profiled_launch(L);
  execute(L);
  check_guard_bytes(name);
  if (!L.failed) return sticky_error();
  if (L.error_kind == "assert") {  // the program's own check, printed as a GPU prints it: its exit code decides
    set_error(cudaErrorAssert, true);
    return cudaErrorAssert;
  }
  record_finding(L.error_kind, L.error);
  set_error(cudaErrorLaunchFailure, true);
  return cudaErrorLaunchFailure;
}

std::mutex launch_mutex;  // one launch at a time, whichever host thread issues it

}  // namespace

void record_finding(std::string_view kind, const std::string& message) {
  std::fprintf(stderr, "kernelab sim: %s\n", message.c_str());
  std::fflush(stderr);
  std::lock_guard lock(state_mutex);
  last_msg = message, ++finding_count;
  if (const char* path = std::getenv("KERNELAB_SIM_FINDINGS"))
    if (FILE* f = std::fopen(path, "a")) {
      std::fprintf(f, "%.*s\t%s\n", int(kind.size()), kind.data(), message.c_str());
      std::fclose(f);
    }
}

void note_message(const std::string& message) {
  std::lock_guard lock(state_mutex);
  last_msg = message;
}

void set_error(cudaError_t e, bool make_sticky) {
  std::lock_guard lock(state_mutex);
  last_error = e;
  if (make_sticky) sticky = e;
}
cudaError_t sticky_error() {
  std::lock_guard lock(state_mutex);
  return sticky;
}
cudaError_t take_last_error(bool clear) {
  std::lock_guard lock(state_mutex);
  const cudaError_t e = sticky != cudaSuccess ? sticky : last_error;
  if (clear) last_error = cudaSuccess;
  return e;
}
void reset_errors() {
  std::lock_guard lock(state_mutex);
  last_error = sticky = cudaSuccess;
}

thread_local bool in_race_check = false;

void require_serial_blocks() { options().serial = true; }

cudaError_t launch(const Kernel& k, dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream) {
  if (Worker* w = current_worker(); w && w->current)
    fault("a kernel launch from device code (dynamic parallelism is not simulated)", Site::current());
  std::lock_guard lock(launch_mutex);
  const std::string name = kernel_name(k);
  if (const cudaError_t e = sticky_error(); e != cudaSuccess) return set_error(e, false), e;
  if (const cudaError_t e = check_config(name, k.address, grid, block, smem); e != cudaSuccess) return e;
  if (!stream_is_valid(stream)) return refuse(cudaErrorInvalidResourceHandle, name, "the stream was not created or was destroyed");
  if (!check_pointers(k, name)) return cudaErrorIllegalAddress;
  install_crash_handlers();
  if (!options().race_check || in_race_check || profiling()) return run(k, name, grid, block, smem);
  // --race-check: every launch, over all the memory a kernel can reach.
  const std::vector<Allocation> all = live_allocations();
  std::vector<Buffer> buffers;
  for (const Allocation& a : all) buffers.push_back(Buffer{a.base, a.bytes, a.kind});
  cudaError_t result = cudaSuccess;
  const RaceResult r = check_races(buffers, [&] { result = run(k, name, grid, block, smem); }, "kernel '" + name + "'");
  if (r.race) record_finding("race", r.message);
  else if (!r.message.empty()) std::fprintf(stderr, "kernelab sim: %s\n", r.message.c_str());
  return result;
}

}  // namespace kl::sim::detail

namespace kl::sim {

Options& options() {
  static Options o = [] {
    Options x;
    if (const char* t = std::getenv("KERNELAB_SIM_THREADS")) x.os_threads = unsigned(std::strtoul(t, nullptr, 10));
    if (const char* s = std::getenv("KERNELAB_SIM_STACK_KB")) x.stack_bytes = std::strtoull(s, nullptr, 10) * 1024;
    x.race_check = detail::env_flag("KERNELAB_SIM_RACE_CHECK");
    x.serial = detail::env_flag("KERNELAB_SIM_SERIAL") || detail::env_flag("KERNELAB_SIM_MEMCHECK");
    return x;
  }();
  return o;
}

std::string last_message() {
  std::lock_guard lock(detail::state_mutex);
  return detail::last_msg;
}

void clear_errors() { detail::reset_errors(); }

int findings() {
  std::lock_guard lock(detail::state_mutex);
  return detail::finding_count;
}

}  // namespace kl::sim
