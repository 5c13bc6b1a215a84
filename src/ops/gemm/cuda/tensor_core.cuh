// What the tensor-core gemm rungs share: fp16 or bf16 operands (A, B, C, D of one dtype,
// fp32 accumulation, D rounded once), the epilogue D = alpha*acc + beta*C, tile loads of
// 16-byte chunks (8 elements) with zero fill past the matrix, and which problems they take.
#pragma once
#include <cstdint>

#include "ops/gemm/cuda/epilogue.cuh"
#include "ops/gemm/gemm.h"
#include "ops/gpu_rowwise.h"

namespace kl::KL_TARGET::gemm_tc {

using rowwise::from_f32;
using rowwise::to_f32;

template <class T> struct Operands {
  const T* __restrict__ a;
  const T* __restrict__ b;
  const T* __restrict__ c;
  T* __restrict__ d;
  int m, n, k;
  float alpha, beta;
  GemmEpilogue epilogue;
  gemm_epilogue::Tensors<T> epi;
};

template <class T> Operands<T> operands(const GemmParams& p, const Args& x) {
  return {static_cast<const T*>(x.in[0].data()), static_cast<const T*>(x.in[1].data()),
          static_cast<const T*>(x.in[2].data()), static_cast<T*>(x.out[0].data()),
          static_cast<int>(p.m), static_cast<int>(p.n), static_cast<int>(p.k),
          static_cast<float>(p.alpha), static_cast<float>(p.beta), p.epilogue, gemm_epilogue::tensors<T>(p, x)};
}

// D(i, j) in fp32 from its accumulator, (i, j) inside D: alpha, beta and the epilogue.
template <class T> __device__ __forceinline__ float finish(const Operands<T>& o, int i, int j, float acc) {
  const int64_t at = static_cast<int64_t>(i) * o.n + j;
  float v = o.beta != 0.0f ? o.alpha * acc + o.beta * to_f32(o.c[at]) : o.alpha * acc;
  if (o.epilogue != GemmEpilogue::none) v = gemm_epilogue::activate(o.epilogue, v + to_f32(o.epi.bias[j]));
  return o.epi.r ? v + to_f32(o.epi.r[at]) : v;
}

template <class T> __device__ __forceinline__ void store(const Operands<T>& o, int i, int j, float acc) {
  o.d[static_cast<int64_t>(i) * o.n + j] = from_f32<T>(finish(o, i, j, acc));
}

// D(i, j) and D(i, j+1) from an mma fragment's pair of adjacent accumulators: one 4-byte store
// when both are inside D, n is even and D starts 4-byte aligned (the pair is then aligned: j is even).
template <class T> __device__ __forceinline__ void store_pair(const Operands<T>& o, int i, int j, float v0, float v1) {
  if (i >= o.m || j >= o.n) return;
  if (j + 1 < o.n && o.n % 2 == 0 && reinterpret_cast<uintptr_t>(o.d) % 4 == 0) {
    struct alignas(4) Pair {
      T x, y;
    };
    *reinterpret_cast<Pair*>(o.d + static_cast<int64_t>(i) * o.n + j) =
        Pair{from_f32<T>(finish(o, i, j, v0)), from_f32<T>(finish(o, i, j + 1, v1))};
    return;
  }
  store(o, i, j, v0);
  if (j + 1 < o.n) store(o, i, j + 1, v1);
}

// Eight elements x[at .. at+8) as one 16-byte chunk, zeros past the `left` the row still has.
// `vec`: the row length is a multiple of 8, so a chunk is 16-byte aligned and all in or all out.
struct alignas(16) Chunk {
  uint32_t w[4];
};
template <class T> __device__ __forceinline__ Chunk load_chunk(const T* __restrict__ x, int64_t at, int left, bool vec) {
  if (vec) return left > 0 ? *reinterpret_cast<const Chunk*>(x + at) : Chunk{};
  T e[8];
  KL_UNROLL
  for (int i = 0; i < 8; ++i) e[i] = i < left ? x[at + i] : from_f32<T>(0.0f);
  Chunk c;
  memcpy(&c, e, sizeof(c));
  return c;
}

inline Reason half_inputs(const GemmParams& p) {
  if ((p.a != DType::f16 && p.a != DType::bf16) || p.b != p.a || p.c != p.a || p.d != p.a)
    return "a tensor-core rung: fp16 or bf16 A, B, C and D (fp32 goes to the CUDA-core rungs)";
  if (p.m > INT32_MAX || p.n > INT32_MAX || p.k > INT32_MAX) return "m, n and k must fit in 32 bits";
  return {};
}

inline Reason half_row_major(const GemmParams& p) {
  if (Reason r = half_inputs(p)) return r;
  if (p.a_col || p.b_col) return "row-major A and B only: its tiles are loaded along rows (a_layout=row, b_layout=row)";
  return {};
}

// Calls f(__half{}) or f(__nv_bfloat16{}) for the problem's dtype.
template <class F> void with_half(DType t, F&& f) {
  if (t == DType::f16) f(__half{});
  else f(__nv_bfloat16{});
}
// One kernel ref per input format: f(__half{}), f(__nv_bfloat16{}).
template <class F> std::vector<KernelRef> for_halves(F&& f) { return {f(__half{}), f(__nv_bfloat16{})}; }

}  // namespace kl::KL_TARGET::gemm_tc
