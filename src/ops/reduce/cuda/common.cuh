// What the reduce rungs (src/ops/reduce/cuda/vNN_*.cu) share: the two reductions, the input
// conversions, the problem-to-template dispatch, and the building blocks later rungs reuse:
// the warp-shuffle fold (introduced by v03) and the 16-byte vector loop (introduced by v04).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "ops/gpu_rowwise.h"  // KL_UNROLL
#include "ops/gpu_rung.h"
#include "ops/reduce/reduce.h"

namespace kl::KL_TARGET::reduce_cuda {

constexpr int kThreads = 256;  // threads per block in every rung
constexpr int kWarps = kThreads / 32;
constexpr int64_t kWarpRowMax = 1024;  // over=rows from v03 on: rows up to this long get a warp each
static_assert(kWarps <= 32, "block_reduce folds one slot per warp inside a single warp");

struct Sum {
  __device__ static float identity() { return 0.0f; }
  __device__ static float apply(float a, float b) { return a + b; }
};
struct Max {
  __device__ static float identity() { return -INFINITY; }
  __device__ static float apply(float a, float b) { return fmaxf(a, b); }
};

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

// f.template operator()<E, Op>() with E the input's element type and Op the reduction.
template <class F> void dispatch(const ReduceParams& p, F&& f) {
  auto with = [&]<class E>() {
    if (p.is_max) f.template operator()<E, Max>();
    else f.template operator()<E, Sum>();
  };
  switch (p.x) {
    case DType::f32: with.template operator()<float>(); return;
    case DType::f16: with.template operator()<__half>(); return;
    case DType::bf16: with.template operator()<__nv_bfloat16>(); return;
    default: runtime_failure("the reduce CUDA rungs take fp32, fp16 or bf16, not " + std::string(dtype_name(p.x)));
  }
}

// What a rung declares: one kernel ref per input element type of reduction Op, f(E{}, Op{})
// giving the kernel ref of one instantiation (E: float, __half, __nv_bfloat16); or of both
// reductions (the Sum instantiations, then the Max ones).
template <class Op, class F> std::vector<KernelRef> for_inputs(F f) { return {f(float{}, Op{}), f(__half{}, Op{}), f(__nv_bfloat16{}, Op{})}; }
template <class F> std::vector<KernelRef> for_inputs_all(F f) {
  std::vector<KernelRef> k = for_inputs<Sum>(f), m = for_inputs<Max>(f);
  k.insert(k.end(), m.begin(), m.end());
  return k;
}

// The workspace of the rungs from v02 on: over=total, one fp32 partial per block of the first pass.
inline size_t partials_bytes(const ReduceParams& p) {
  return p.total ? static_cast<size_t>(kReduceMaxPartials) * sizeof(float) : size_t{0};
}

// Blocks of the grid-stride pass over=total: enough for `per_thread` elements a thread, at most
// kReduceMaxPartials (the workspace holds one partial per block).
inline int total_blocks(int64_t n, int64_t per_thread) {
  const int64_t want = (n + kThreads * per_thread - 1) / (kThreads * per_thread);
  return static_cast<int>(want < 1 ? 1 : want > kReduceMaxPartials ? kReduceMaxPartials : want);
}

// What a thread of a block-wide fold reads: over=rows (per_row), block b folds row b and its
// threads stride by the block; over=total the whole grid strides over the n elements and each
// block's result is one partial. The thread's elements are x[base + t], x[base + t + stride], ...
// below x[base + len]. (Offsets, not a pointer: a pointer chosen at run time would lose its
// global address space and turn the loads into generic ones.)
struct Share {
  int64_t base, len, t, stride;
};
__device__ __forceinline__ Share block_share(int64_t n, int64_t cols, bool per_row) {
  if (per_row) return {blockIdx.x * cols, cols, threadIdx.x, blockDim.x};
  return {0, n, static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x, static_cast<int64_t>(gridDim.x) * blockDim.x};
}

// ---- v03: folds in registers across the lanes of a warp ------------------------------------
// Lane 0 ends with the warp's result: each step adds the upper half of the lanes onto the lower.
template <class Op> __device__ __forceinline__ float warp_reduce(float v) {
  KL_UNROLL
  for (int offset = 16; offset > 0; offset /= 2) v = Op::apply(v, __shfl_down_sync(0xffffffffu, v, offset));
  return v;
}

// Thread 0 ends with the block's result: warps fold, one shared slot per warp, warp 0 folds the
// slots. Every thread of the block must call it (it holds a barrier).
template <class Op> __device__ __forceinline__ float block_reduce(float v) {
  KL_SHARED(float, slots, [kWarps]);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_reduce<Op>(v);
  if (lane == 0) slots[warp] = v;
  __syncthreads();
  if (warp == 0) v = warp_reduce<Op>(lane < kWarps ? slots[lane] : Op::identity());
  return v;
}

// ---- v04: 16-byte vector loads, several vectors in flight per thread ------------------------
// A 16-byte read-only load. A GPU faults on one that is not 16-byte aligned; the host does not,
// so the simulator build checks, to catch what the hardware would.
__device__ __forceinline__ uint4 ldg16(const uint4* p) {
#ifdef KERNELAB_SIM
  if (reinterpret_cast<uintptr_t>(p) % 16 != 0) kl::sim::detail::fault("misaligned 16-byte load", kl::sim::Site::current());
#endif
  return __ldg(p);
}

// Folds four fp32 or eight 16-bit elements held in a 16-byte vector.
template <class E, class Op> __device__ __forceinline__ float fold16(float acc, uint4 q) {
  const uint32_t w[4] = {q.x, q.y, q.z, q.w};
  KL_UNROLL
  for (int k = 0; k < 4; ++k) {
    if constexpr (sizeof(E) == 4) {
      acc = Op::apply(acc, __uint_as_float(w[k]));
    } else if constexpr (std::is_same_v<E, __nv_bfloat16>) {  // bf16 is the top half of an fp32
      acc = Op::apply(Op::apply(acc, __uint_as_float(w[k] << 16)), __uint_as_float(w[k] & 0xffff0000u));
    } else {
      acc = Op::apply(acc, __half2float(__ushort_as_half(static_cast<unsigned short>(w[k] & 0xffffu))));
      acc = Op::apply(acc, __half2float(__ushort_as_half(static_cast<unsigned short>(w[k] >> 16))));
    }
  }
  return acc;
}

// This thread's share of x[0, len): elements t, t + stride, ... The span is cut at 16-byte
// boundaries: a head of at most V-1 elements before the first boundary and a tail after the
// last whole vector are read one by one; the body as 16-byte vectors, four loads in flight.
template <class E, class Op> __device__ float fold_span16(const E* x, int64_t len, int64_t t, int64_t stride) {
  constexpr int V = 16 / sizeof(E);
  const int64_t past = static_cast<int64_t>(reinterpret_cast<uintptr_t>(x) % 16 / sizeof(E));
  const int64_t head = past == 0 ? 0 : (V - past < len ? V - past : len);
  const int64_t nvec = (len - head) / V;
  const uint4* body = reinterpret_cast<const uint4*>(x + head);
  float acc = Op::identity();
  for (int64_t i = t; i < head; i += stride) acc = Op::apply(acc, to_float(__ldg(x + i)));
  int64_t v = t;
  for (; v + 3 * stride < nvec; v += 4 * stride) {
    uint4 q[4];
    KL_UNROLL
    for (int k = 0; k < 4; ++k) q[k] = ldg16(body + v + k * stride);
    KL_UNROLL
    for (int k = 0; k < 4; ++k) acc = fold16<E, Op>(acc, q[k]);
  }
  for (; v < nvec; v += stride) acc = fold16<E, Op>(acc, ldg16(body + v));
  for (int64_t i = head + nvec * V + t; i < len; i += stride) acc = Op::apply(acc, to_float(__ldg(x + i)));
  return acc;
}

}  // namespace kl::KL_TARGET::reduce_cuda
