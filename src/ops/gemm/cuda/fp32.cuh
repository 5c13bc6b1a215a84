// What the fp32 CUDA-core gemm rungs share: the operands as the kernels take them, the store of
// D = act(alpha*acc + beta*C + bias) + R (C is not read when beta is 0), and which problems the
// tiled rungs take (fp32, A and B row-major: their tiles are loaded along rows).
#pragma once
#include <cstdint>

#include "ops/gemm/cuda/epilogue.cuh"
#include "ops/gemm/gemm.h"
#include "ops/gpu_rung.h"

namespace kl::KL_TARGET::gemm_fp32 {

struct Operands {
  const float* __restrict__ a;
  const float* __restrict__ b;
  const float* __restrict__ c;
  float* __restrict__ d;
  int m, n, k;
  float alpha, beta;
  GemmEpilogue epilogue;
  gemm_epilogue::Tensors<float> epi;
};

inline Operands operands(const GemmParams& p, const Args& x) {
  return {static_cast<const float*>(x.in[0].data()), static_cast<const float*>(x.in[1].data()),
          static_cast<const float*>(x.in[2].data()), static_cast<float*>(x.out[0].data()),
          static_cast<int>(p.m), static_cast<int>(p.n), static_cast<int>(p.k),
          static_cast<float>(p.alpha), static_cast<float>(p.beta), p.epilogue, gemm_epilogue::tensors<float>(p, x)};
}

// D(i, j) from its accumulator: alpha, beta and the epilogue.
__device__ __forceinline__ void store(const Operands& o, int i, int j, float acc) {
  const int64_t at = static_cast<int64_t>(i) * o.n + j;
  float v = o.beta != 0.0f ? o.alpha * acc + o.beta * o.c[at] : o.alpha * acc;
  if (o.epilogue != GemmEpilogue::none) v = gemm_epilogue::activate(o.epilogue, v + o.epi.bias[j]);
  o.d[at] = o.epi.r ? v + o.epi.r[at] : v;
}

// A(i, l) and B(l, j) stored row- or column-major (the naive rungs take every layout).
__device__ __forceinline__ float a_at(const Operands& o, int i, int l, bool a_col) {
  return a_col ? o.a[static_cast<int64_t>(l) * o.m + i] : o.a[static_cast<int64_t>(i) * o.k + l];
}
__device__ __forceinline__ float b_at(const Operands& o, int l, int j, bool b_col) {
  return b_col ? o.b[static_cast<int64_t>(j) * o.k + l] : o.b[static_cast<int64_t>(l) * o.n + j];
}

// acc += m n^T: TM x TN multiply-adds from TM + TN registers (the register-blocking step).
template <int TM, int TN>
__device__ __forceinline__ void outer_product(float (&acc)[TM][TN], const float (&m)[TM], const float (&n)[TN]) {
  KL_UNROLL
  for (int r = 0; r < TM; ++r)
    KL_UNROLL
    for (int c = 0; c < TN; ++c) acc[r][c] += m[r] * n[c];
}

// A TM x TN square of accumulators into D at (i0, j0), the part inside D.
template <int TM, int TN>
__device__ __forceinline__ void store_square(const Operands& o, int i0, int j0, const float (&acc)[TM][TN]) {
  KL_UNROLL
  for (int r = 0; r < TM; ++r)
    KL_UNROLL
    for (int c = 0; c < TN; ++c)
      if (i0 + r < o.m && j0 + c < o.n) store(o, i0 + r, j0 + c, acc[r][c]);
}

// x[at .. at+4) with zeros past the `left` elements the row still has. `vec`: at is 4-aligned
// and the row length a multiple of 4, so the four are all in or all out and one 16-byte load
// takes them; otherwise element by element (a float4 would be misaligned).
__device__ __forceinline__ float4 load4(const float* __restrict__ x, int64_t at, int left, bool vec) {
  if (vec) return left > 0 ? *reinterpret_cast<const float4*>(x + at) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  return make_float4(left > 0 ? x[at] : 0.0f, left > 1 ? x[at + 1] : 0.0f, left > 2 ? x[at + 2] : 0.0f,
                     left > 3 ? x[at + 3] : 0.0f);
}

inline Reason fp32_only(const GemmParams& p) {
  if (p.a != DType::f32 || p.b != DType::f32 || p.c != DType::f32 || p.d != DType::f32)
    return "an fp32 CUDA-core rung: fp16 and bf16 go to the tensor-core rungs";
  if (p.m > INT32_MAX || p.n > INT32_MAX || p.k > INT32_MAX) return "m, n and k must fit in 32 bits";
  return {};
}

inline Reason fp32_row_major(const GemmParams& p) {
  if (Reason r = fp32_only(p)) return r;
  if (p.a_col || p.b_col) return "row-major A and B only: its tiles are loaded along rows (a_layout=row, b_layout=row)";
  return {};
}

}  // namespace kl::KL_TARGET::gemm_fp32
