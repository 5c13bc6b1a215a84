// What every CUDA rung file (src/ops/<op>/cuda/vNN_*.cu) includes. Each such file is compiled
// twice: by nvcc for the cuda backend (namespace kl::cuda) and by the host compiler with the
// SIMT simulator's header for the sim backend (namespace kl::sim_ops). The two builds differ
// only in what the macros below expand to.
#pragma once
#include <string>

#include "kernelab/error.h"
#include "kernelab/op.h"

#if defined(KERNELAB_SIM)
#define KL_TARGET sim_ops
// kernel<<<grid, block, smem, stream>>>(args...) on the simulator; a refused launch throws.
#define KL_LAUNCH(kernel, grid, block, smem, stream, ...)                                                           \
  ::kl::check_launch(::kl::sim::launch_named(#kernel, kernel, grid, block, smem, static_cast<cudaStream_t>(stream), \
                                             __VA_ARGS__),                                                         \
                     #kernel)
// The block's dynamic shared memory as a T*.
#define KL_DYNAMIC_SHARED(T, name) T* name = ::kl::sim::dynamic_shared<T>()
#else
#include <cuda_runtime.h>
#define KL_TARGET cuda
#define KL_LAUNCH(kernel, grid, block, smem, stream, ...)                             \
  do {                                                                               \
    kernel<<<grid, block, smem, static_cast<cudaStream_t>(stream)>>>(__VA_ARGS__); \
    ::kl::check_launch(cudaGetLastError(), #kernel);                                \
  } while (0)
#define KL_DYNAMIC_SHARED(T, name)                                    \
  extern __shared__ __align__(16) unsigned char kl_dynamic_smem_[]; \
  T* name = reinterpret_cast<T*>(kl_dynamic_smem_)
#endif

namespace kl {
inline void check_launch(cudaError_t e, const char* kernel) {
  if (e != cudaSuccess) runtime_failure(std::string("launch of ") + kernel + " failed: " + cudaGetErrorString(e));
}
// A runtime API call a rung makes (device attributes, streams, graphs).
inline void check_cuda(cudaError_t e, const char* call) {
  if (e != cudaSuccess) runtime_failure(std::string(call) + " failed: " + cudaGetErrorString(e));
}
}  // namespace kl
