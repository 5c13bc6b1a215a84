// What the FlashAttention-2 backward rungs (v12 on CUDA cores, v13 on tensor cores) share: the row
// dot D = rowsum(dO o O) that dS = P o (dP - D) needs, and dQ's fp32 accumulator (the atomics'
// target), rounded to the element type at the end. Both sit in the workspace after the offsets.
#pragma once
#include "ops/attention/cuda/attention_common.cuh"

namespace kl::KL_TARGET::attention {

// Internal linkage: a kernel's host stub is local to each object, so a shared launcher must be too,
// or the linker keeps one object's copy and the others launch a stub their rung does not declare.
namespace {

inline constexpr int kBwdThreads = 256;

// D of row (token, head) = dO . O, one warp per row, stored [h, total_q] as the LSE is.
template <class E>
__global__ void row_dot(const E* __restrict__ out, const E* __restrict__ d_out, float* __restrict__ d, Shape m) {
  const int64_t row = (int64_t{blockIdx.x} * kBwdThreads + threadIdx.x) / 32;  // token * heads + h
  if (row >= m.total_q * m.heads) return;
  float acc = 0;
  for (int c = threadIdx.x % 32; c < m.dv; c += 32) acc += rowwise::to_f32(out[row * m.dv + c]) * rowwise::to_f32(d_out[row * m.dv + c]);
  acc = rowwise::warp_reduce(acc, rowwise::Sum{});
  if (threadIdx.x % 32 == 0) d[(row % m.heads) * m.total_q + row / m.heads] = acc;
}

template <class E> __global__ void dq_convert(const float* __restrict__ acc, E* __restrict__ dq, int64_t n) {
  const int64_t e = int64_t{blockIdx.x} * kBwdThreads + threadIdx.x;
  if (e < n) dq[e] = rowwise::from_f32<E>(acc[e]);
}

inline unsigned bwd_blocks(int64_t threads) { return unsigned((threads + kBwdThreads - 1) / kBwdThreads); }

// Workspace after the offsets: D, then (atomic dQ only) the fp32 dQ.
inline size_t d_bytes(const AttentionParams& p) { return round256(size_t(p.heads * p.total_q()) * sizeof(float)); }
inline size_t dq_bytes(const AttentionParams& p) {
  return p.deterministic ? 0 : size_t(p.total_q() * p.heads * p.head_dim) * sizeof(float);
}
inline size_t bwd_workspace_bytes(const AttentionParams& p) { return offset_bytes(p) + d_bytes(p) + dq_bytes(p); }

// D into the workspace (out: O, d_out: dO); returns D and the fp32 dQ, zeroed when dQ is atomic.
template <class E>
void start_backward(const AttentionParams& p, const Args& a, const E* out, const E* d_out, float*& d, float*& dq_acc) {
  char* at = static_cast<char*>(a.workspace) + offset_bytes(p);
  d = reinterpret_cast<float*>(at);
  dq_acc = reinterpret_cast<float*>(at + d_bytes(p));
  KL_LAUNCH(row_dot<E>, bwd_blocks(p.total_q() * p.heads * 32), kBwdThreads, 0, a.stream, out, d_out, d, shape_of(p));
  if (!p.deterministic) check_cuda(cudaMemsetAsync(dq_acc, 0, dq_bytes(p), static_cast<cudaStream_t>(a.stream)), "cudaMemsetAsync");
}

// dQ from its fp32 accumulator.
template <class E> void finish_atomic_dq(const AttentionParams& p, const Args& a, const float* dq_acc) {
  const int64_t n = p.total_q() * p.heads * p.head_dim;
  KL_LAUNCH(dq_convert<E>, bwd_blocks(n), kBwdThreads, 0, a.stream, dq_acc, static_cast<E*>(a.out[0].data()), n);
}

}  // namespace

}  // namespace kl::KL_TARGET::attention
