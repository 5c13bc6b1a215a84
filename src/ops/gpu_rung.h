// What every CUDA rung file (src/ops/<op>/cuda/vNN_*.cu) includes, and how it declares itself.
// Each such file is compiled by nvcc for the cuda backend (namespace kl::cuda) and by the host
// compiler with the SIMT simulator's header for the sim backend (namespace kl::sim_ops; and again,
// instrumented, for the profiler: kl::sim_profile); the builds differ only in what the macros below
// expand to.
//
// A rung file keeps its kernels and launchers in `namespace KL_RUNG_ID { namespace { ... } }`
// inside namespace kl::KL_TARGET, and ends with its declaration, which the build turns into the
// registry (the file's vNN is its place in the ladder; cmake/ops.cmake lists the files):
//
//   KL_RUNGS {
//     Rung<SoftmaxParams> r{.op = "softmax", .name = "cuda_online", .note = "...",
//                           .configs = {{.name = "256_threads", .threads = 256,
//                                        .kernels = {{for_elements([](auto e) { return KL_KERNEL(online<decltype(e)>); }),
//                                                     {"bar.sync"}, {"BAR.SYNC"}}},  // PTX and SASS claims
//                                        .run = launch}}};
//     return {variant_of(r)};
//   }
#pragma once
#include <source_location>
#include <string>
#include <string_view>
#include <vector>

#include "kernelab/error.h"
#include "kernelab/launch_log.h"
#include "kernelab/op.h"

#if defined(KERNELAB_SIM)
#if defined(KERNELAB_SIM_PROFILE)
#define KL_TARGET sim_profile  // the profiling build: -fsanitize=thread's hooks count every access
#else
#define KL_TARGET sim_ops
#endif
// kernel<<<grid, block, smem, stream>>>(args...) on the simulator; a refused launch throws.
#define KL_LAUNCH(kernel, grid, block, smem, stream, ...)                                                           \
  do {                                                                                                             \
    ::kl::record_launch((const void*)(kernel));                                                                     \
    ::kl::check_launch(::kl::sim::launch_named(#kernel, kernel, grid, block, smem, static_cast<cudaStream_t>(stream), \
                                               __VA_ARGS__),                                                       \
                       #kernel);                                                                                   \
  } while (0)
// The block's dynamic shared memory as a T*.
#define KL_DYNAMIC_SHARED(T, name) T* name = ::kl::sim::dynamic_shared<T>()
// Static shared memory: once per block, filled with 0xFF (NaN) at the block's first use.
#define KL_SHARED(T, name, dims) \
  thread_local T name dims;      \
  ::kl::sim::poison_shared_once(&name, sizeof(name))
#else
#include <cuda_runtime.h>
#define KL_TARGET cuda
#define KL_LAUNCH(kernel, grid, block, smem, stream, ...)                             \
  do {                                                                               \
    ::kl::record_launch((const void*)(kernel));                                       \
    kernel<<<grid, block, smem, static_cast<cudaStream_t>(stream)>>>(__VA_ARGS__); \
    ::kl::check_launch(cudaGetLastError(), #kernel);                                \
  } while (0)
#define KL_DYNAMIC_SHARED(T, name)                                    \
  extern __shared__ __align__(16) unsigned char kl_dynamic_smem_[]; \
  T* name = reinterpret_cast<T*>(kl_dynamic_smem_)
#define KL_SHARED(T, name, dims) __shared__ T name dims
#endif

// `#pragma unroll` for nvcc (the host compiler of the simulator build does not know it): KL_UNROLL
// so that arrays indexed by the loop's counter stay in registers, KL_NO_UNROLL where a loop that
// nvcc would unroll in full has a large body.
#if defined(KERNELAB_SIM)
#define KL_UNROLL
#define KL_NO_UNROLL
#else
#define KL_UNROLL _Pragma("unroll")
#define KL_NO_UNROLL _Pragma("unroll 1")
#endif

// The kernel ref of a kernel (a template-id like softmax_warp<float, 4> may hold commas).
#define KL_KERNEL(...) ::kl::KL_TARGET::kernel_ref<__VA_ARGS__>()
// The function the registry calls for this file; KL_RUNG_ID is the file's path, set by the build.
// Its body is KL_RUNG_ID::rungs(), so that it sees the file's own names in namespace KL_RUNG_ID,
// where each rung file keeps them: nvcc and the simulator build a family's rung files in batches
// (cmake/ops.cmake's kl_rung_units).
#define KL_RUNGS_CONCAT2(a, b) a##b
#define KL_RUNGS_CONCAT(a, b) KL_RUNGS_CONCAT2(a, b)
#define KL_RUNGS                                                                                          \
  namespace KL_RUNG_ID {                                                                                  \
  std::vector<::kl::Variant> rungs();                                                                     \
  }                                                                                                       \
  std::vector<::kl::Variant> KL_RUNGS_CONCAT(rung_, KL_RUNG_ID)() { return KL_RUNG_ID::rungs(); }         \
  std::vector<::kl::Variant> KL_RUNG_ID::rungs()

namespace kl {
inline void check_launch(cudaError_t e, const char* kernel) {
  if (e != cudaSuccess) runtime_failure(std::string("launch of ") + kernel + " failed: " + cudaGetErrorString(e));
}
// A runtime API call a rung makes (device attributes, streams, graphs).
inline void check_cuda(cudaError_t e, const char* call) {
  if (e != cudaSuccess) runtime_failure(std::string(call) + " failed: " + cudaGetErrorString(e));
}

// Lets `kernel` use `bytes` of dynamic shared memory, above the 48 KB a block gets without asking;
// once per kernel.
template <auto kernel> void allow_dynamic_smem(int bytes) {
  static const bool done = (check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes),
                                       "cudaFuncSetAttribute"),
                            true);
  (void)done;
}

// One configuration of a rung, typed by the op's parameter struct P.
template <class P> struct RungConfig {
  std::string name = {};
  int threads = 0;            // per block, of every launch
  int64_t dynamic_smem = 0;   // bytes per block
  std::vector<KernelGroup> kernels = {};
  void (*run)(const P&, const Args&) = nullptr;
  std::function<Reason(const P&)> supports = nullptr;  // beyond the rung's own
  std::optional<Tiling> tiling = std::nullopt;
};

template <class P> struct Rung {
  std::string op = {}, name = {}, note = {};
  bool peer = false;  // a library (cuBLAS...) rather than a kernel of ours
  std::function<Reason(const P&)> supports = nullptr;
  std::function<size_t(const P&)> workspace_bytes = nullptr;
  std::function<double(const P&)> tolerance = nullptr;  // nullptr: the op's
  std::vector<RungConfig<P>> configs = {};
};
}  // namespace kl

namespace kl::KL_TARGET {

// Device queries a launcher makes. In this namespace, one per build: the simulator build's runtime
// calls are its own (api.h renames them), and an inline function of one name in both builds would
// be one function to the linker, whichever object came first.

// The current device's SM count (grids sized to fill the GPU: split-KV, persistent kernels).
inline int sm_count() {
  int device = 0, sms = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  check_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
  return sms;
}

// The most dynamic shared memory a block of the current device may opt in to (227 KiB on an H100,
// 163 on an A100, 99 on sm_86/89).
inline int smem_optin_bytes() {
  int device = 0, bytes = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  check_cuda(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device), "cudaDeviceGetAttribute");
  return bytes;
}

template <auto K> KernelRef kernel_ref() {
  KernelRef k;
  k.name = kernel_name_of_signature(__PRETTY_FUNCTION__);
#if defined(KERNELAB_SIM_PROFILE)
  k.sim_profile = (const void*)K;
#elif defined(KERNELAB_SIM)
  k.sim = (const void*)K;
#else
  k.cuda = (const void*)K;
#endif
  return k;
}

// The rung as a Variant of this build: its launchers become `run` (nvcc) or `sim_run` (simulator).
template <class P> Variant variant_of(const Rung<P>& r, std::source_location where = std::source_location::current()) {
  Variant v = cuda_variant(r.op, r.name, r.note, r.peer, where.file_name());
  if (r.supports) v.supports = [f = r.supports](const Problem& p) { return f(p.as<P>()); };
  if (r.workspace_bytes) v.workspace_bytes = [f = r.workspace_bytes](const Problem& p) { return f(p.as<P>()); };
  if (r.tolerance) v.tolerance = [f = r.tolerance](const Problem& p) { return f(p.as<P>()); };
  for (const RungConfig<P>& c : r.configs) {
    Config x = cuda_config(c.name, c.threads, c.dynamic_smem, c.kernels, c.tiling);
    Launcher launch = [fn = c.run](const Problem& p, const Args& a) { fn(p.as<P>(), a); };
#if defined(KERNELAB_SIM_PROFILE)
    x.sim_profile_run = launch;
#elif defined(KERNELAB_SIM)
    x.sim_run = launch;
#else
    x.run = launch;
#endif
    if (c.supports) x.supports = [f = c.supports](const Problem& p) { return f(p.as<P>()); };
    v.configs.push_back(std::move(x));
  }
  return v;
}

}  // namespace kl::KL_TARGET
