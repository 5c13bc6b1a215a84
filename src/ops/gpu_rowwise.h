// Device helpers shared by the row-wise and elementwise CUDA rungs (softmax, layernorm/rmsnorm,
// bias_gelu): element <-> fp32 conversions (math is always fp32), packs of W elements loaded and
// stored as one access (16 bytes: ld.global.nc.v4 / st.global.v4), warp and block reductions,
// and the host's dtype dispatch. Like gpu_rung.h it builds for nvcc and for the simulator.
#pragma once
#include <cstdint>
#include <cstring>

#include "ops/gpu_rung.h"
#if !defined(KERNELAB_SIM)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace kl::KL_TARGET::rowwise {

// ---- elements: fp32, fp16, bf16 in memory; fp32 in registers ------------------------------
__device__ __forceinline__ float to_f32(float v) { return v; }
#if defined(KERNELAB_SIM)
__device__ __forceinline__ float to_f32(__half v) { return kl::sim::half_value(static_cast<__half_raw>(v).x); }
#else
__device__ __forceinline__ float to_f32(__half v) { return __half2float(v); }
#endif
__device__ __forceinline__ float to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }
template <class E> __device__ __forceinline__ E from_f32(float v) {
  if constexpr (std::is_same_v<E, __half>) return __float2half_rn(v);
  else if constexpr (std::is_same_v<E, __nv_bfloat16>) return __float2bfloat16_rn(v);
  else return v;
}

// Elements per 16-byte access: 4 fp32, 8 fp16/bf16.
template <class E> inline constexpr int kVec = 16 / static_cast<int>(sizeof(E));

// ---- packs: W consecutive elements moved as one access ------------------------------------
template <class E, int W> struct alignas(sizeof(E) * W) Pack {
  E v[W];
};

// p must be aligned to the pack. A 16-byte pack is one read-only vector load (ld.global.nc.v4);
// the input must not be written during the kernel.
template <int W, class E> __device__ __forceinline__ Pack<E, W> load_pack(const E* p) {
  Pack<E, W> r;
  if constexpr (sizeof(r) == 16) {
    const uint4 u = __ldg(reinterpret_cast<const uint4*>(p));
    memcpy(&r, &u, 16);
  } else {
    for (int i = 0; i < W; ++i) r.v[i] = p[i];
  }
  return r;
}
template <int W, class E> __device__ __forceinline__ void store_pack(E* p, const Pack<E, W>& r) {
  if constexpr (sizeof(r) == 16) {
    uint4 u;
    memcpy(&u, &r, 16);
    *reinterpret_cast<uint4*>(p) = u;  // st.global.v4
  } else {
    for (int i = 0; i < W; ++i) p[i] = r.v[i];
  }
}

inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// ---- reductions ------------------------------------------------------------------------------
struct Sum {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// All 32 lanes of the warp take part; every lane gets the result (xor butterfly).
template <class Op> __device__ __forceinline__ float warp_reduce(float v, Op op) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// A tree in shared memory over the block (blockDim.x a power of two, buf of blockDim.x values);
// every thread gets the result, and buf may be reused as soon as it returns.
template <class T, class Op> __device__ T block_reduce_smem(T v, Op op, T* buf) {
  const int t = threadIdx.x;
  buf[t] = v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) buf[t] = op(buf[t], buf[t + s]);
    __syncthreads();
  }
  const T r = buf[0];
  __syncthreads();
  return r;
}

// ---- host side -------------------------------------------------------------------------------
// Calls f with a value of the element type of dtype t (float, __half or __nv_bfloat16).
template <class F> void with_element(DType t, F&& f) {
  switch (t) {
    case DType::f32: f(float{}); return;
    case DType::f16: f(__half{}); return;
    case DType::bf16: f(__nv_bfloat16{}); return;
    default: runtime_failure("the row-wise CUDA rungs take fp32, fp16 or bf16, not " + std::string(dtype_name(t)));
  }
}

// One kernel ref per element type a row-wise rung takes: f(float{}), f(__half{}), f(__nv_bfloat16{}).
template <class F> std::vector<KernelRef> for_elements(F&& f) { return {f(float{}), f(__half{}), f(__nv_bfloat16{})}; }

// Blocks for a grid-stride loop over n items, at most `cap` blocks.
inline unsigned grid_for(int64_t n, int threads, int64_t cap = 65535) {
  const int64_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b < 1 ? 1 : b > cap ? cap : b);
}

}  // namespace kl::KL_TARGET::rowwise
