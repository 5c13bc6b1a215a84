// The simulator's CUDA C++ for the host compiler. `g++ -std=c++20 -include sim/cuda_sim.h`
// turns a .cu file (after sim/run/rewrite's `<<<>>>` rewrite) into a host program whose
// kernels run on kl::sim's fibers: one OS thread per block in flight, one fiber per CUDA
// thread, switching only at barriers and warp collectives.
//
// The toolkit's own headers supply dim3, the vector types and the host paths of __half,
// __nv_bfloat16 and fp8; what nvcc builds in (threadIdx, __syncthreads, __shfl_sync, atomics,
// __shared__) comes from the headers below.
#pragma once
#define KERNELAB_SIM 1

// device_launch_parameters.h declares threadIdx & co. as extern "C" constants; ours are
// per-fiber thread_locals (launch.h), so keep it out even if a program includes it.
#define __DEVICE_LAUNCH_PARAMETERS_H__

// Standard headers before the qualifier macros: libstdc++ spells attributes with names
// like __noinline__ that we define below.
#include <math.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>

// Execution-space and memory-space qualifiers. Without __CUDACC__ the toolkit already maps
// most of them to nothing; say so explicitly, and give __shared__ its simulator meaning.
#undef __global__
#undef __device__
#undef __host__
#undef __constant__
#undef __managed__
#undef __shared__
#undef __forceinline__
#undef __noinline__
#undef __launch_bounds__
#undef __grid_constant__
#if KERNELAB_SIM_PROFILE
// Every call inlined into the kernel: GCC's TSan pass does not instrument a call whose result is
// stored straight to memory (out[i] = __float2bfloat16_rn(v) where the conversion stays a call),
// so such a store would go uncounted.
#define __global__ __attribute__((flatten))
#else
#define __global__
#endif
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __grid_constant__
#define __forceinline__ inline  // not always_inline: a __forceinline__ function may be passed by pointer
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)

// Static shared memory lives once per block. A block runs start to end on one OS thread
// and an OS thread runs one block at a time, so a thread_local has exactly that lifetime
// (at block scope thread_local implies static, which keeps `static __shared__` valid too).
// Under --memcheck blocks run one at a time on one thread and __shared__ is a plain static:
// AddressSanitizer puts redzones around globals, not around thread_locals. The rewriter
// drops a `static` written before __shared__ so that this does not read `static static`.
#ifdef KERNELAB_SIM_MEMCHECK
#define __shared__ static
#else
#define __shared__ thread_local
#endif

#include "launch.h"      // threadIdx & co., kl::sim::launch, options, race check
#include "warp.h"        // __syncthreads, __shfl_sync, votes, kl::sim::warp_exchange
#include "atomics.h"     // atomicAdd & co.
#include "intrinsics.h"  // __expf, __popc, min/max, __ldg, half math the toolkit keeps device-only
#include "cg.h"          // cooperative_groups
#include "wmma.h"        // nvcuda::wmma (m16n16k16)
#include "api.h"         // cudaMalloc & co. (as kl_sim_cudaMalloc, next to the real ones)
#include "cublas_names.h"  // cuBLAS and cuBLASLt on the CPU (as kl_sim_cublasSgemm_v2 ...)
#include "hopper.h"        // mbarrier, TMA and wgmma behind src/cuda/ptx_sm90.h's twins

#ifdef KERNELAB_SIM_MEMCHECK
namespace kl::sim::detail {
// Plain-static __shared__ is shared by all blocks: make the runtime run them one at a time.
inline const bool memcheck_serial = (require_serial_blocks(), true);
}  // namespace kl::sim::detail
#endif

// `sim run` compiles a program once, as host and device code together; nvcc's device pass
// defines __CUDA_ARCH__, so the driver defines it too (the simulated GPU's: 900 by default),
// after the toolkit's headers, which would take their device-only paths. Device code under
// `#if __CUDA_ARCH__ >= 700` is kept; host code under `#ifndef __CUDA_ARCH__` is not.
#ifdef KERNELAB_SIM_CUDA_ARCH
#define __CUDA_ARCH__ KERNELAB_SIM_CUDA_ARCH
#endif
