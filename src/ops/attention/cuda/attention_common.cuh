// What the attention rungs share: the shape every kernel takes by value, the per-sequence offsets
// (cu_seqlens) copied into the head of the workspace, and the mask.
#pragma once
#include <algorithm>
#include <vector>

#include "ops/attention/attention.h"
#include "ops/gpu_rowwise.h"
#include "ops/gpu_rung.h"

namespace kl::KL_TARGET::attention {

struct Shape {
  int heads, group, d, dv, causal, window;  // window -1: none
  float scale;
  int64_t total_q;
};
struct Offsets {
  const int64_t *q, *kv;  // batch + 1 each: each sequence's first query and first key
};

inline Shape shape_of(const AttentionParams& p) {
  return {int(p.heads), int(p.group()), int(p.head_dim), int(p.head_dim_v), p.causal ? 1 : 0, int(p.window), float(p.scale),
          p.total_q()};
}

// The keys [first, last) that query i of a sequence of sq queries and sk keys sees (AttentionParams::visible).
__device__ __forceinline__ void visible(const Shape& m, int64_t sq, int64_t sk, int64_t i, int64_t& first, int64_t& last) {
  const int64_t at = i + sk - sq;
  first = 0;
  last = m.causal && at + 1 < sk ? at + 1 : sk;
  if (m.window >= 0) {
    first = at - m.window > 0 ? at - m.window : 0;
    if (!m.causal && at + m.window + 1 < last) last = at + m.window + 1;
  }
  if (last < first) last = first;
}

// The queries [lo, hi) of a sequence that see some key of [j0, j1). A query's first and last keys
// never decrease with its position, so the queries form one range, found by bisection.
__device__ __forceinline__ void queries_seeing(const Shape& m, int64_t sq, int64_t sk, int64_t j0, int64_t j1, int64_t& lo, int64_t& hi) {
  int64_t a = 0, b = sq;  // lo: the first query whose last key is past j0 (a query that sees none may fall inside)
  while (a < b) {
    const int64_t mid = (a + b) / 2;
    int64_t first, last;
    visible(m, sq, sk, mid, first, last);
    if (last > j0) b = mid;
    else a = mid + 1;
  }
  lo = a, b = sq;  // hi: past the last query whose first key is before j1
  while (a < b) {
    const int64_t mid = (a + b) / 2;
    int64_t first, last;
    visible(m, sq, sk, mid, first, last);
    if (first < j1) a = mid + 1;
    else b = mid;
  }
  hi = a;
}

// Why a rung whose grid's y dimension is (sequence, head) refuses a shape; empty when it fits.
inline Reason heads_must_fit_grid(const AttentionParams& p) {
  if (p.batch * p.heads > 65535) return "batch x heads must fit a grid dimension (65535)";
  return {};
}

// n bytes rounded up to 256: workspace parts that start 256-byte aligned.
inline size_t round256(size_t n) { return (n + 255) / 256 * 256; }

// Bytes the offsets take at the workspace's head, rounded to 256 so that what follows is aligned.
inline size_t offset_bytes(const AttentionParams& p) { return round256(2 * (size_t(p.batch) + 1) * sizeof(int64_t)); }

// acc[x] += sum_jj p[jj] V[jj][lane + 32x] over one tile of `keys` keys, for a lane that holds
// columns lane + 32x (x < kOut) of a row: each column's keys summed in order, then added to acc. Keys
// outside, the lane's columns unrolled inside: one read of p[jj] per key, and nvcc unrolls kOut
// columns, not kOut x keys.
template <int kOut, class E>
__device__ __forceinline__ void add_tile_pv(float (&acc)[kOut], const float* p, const E* v, int v_stride, int keys, int lane, int dv) {
  float sum[kOut] = {};
  KL_NO_UNROLL
  for (int jj = 0; jj < keys; ++jj) {
    const float pj = p[jj];
    KL_UNROLL
    for (int x = 0; x < kOut; ++x)
      if (lane + 32 * x < dv) sum[x] += pj * rowwise::to_f32(v[jj * v_stride + lane + 32 * x]);
  }
  KL_UNROLL
  for (int x = 0; x < kOut; ++x) acc[x] += sum[x];
}

// Two floats as the element pair an mma register holds (fp16 or bf16), the first in the low half.
template <class E> __device__ __forceinline__ uint32_t pack_pair(float lo, float hi) {
  const E e[2] = {rowwise::from_f32<E>(lo), rowwise::from_f32<E>(hi)};
  uint32_t r;
  memcpy(&r, e, sizeof(r));
  return r;
}

// Copies q_start and kv_start into the workspace; the device pointers to them.
inline Offsets upload_offsets(const AttentionParams& p, const Args& a) {
  std::vector<int64_t> host(p.q_start);
  host.insert(host.end(), p.kv_start.begin(), p.kv_start.end());
  int64_t* dev = static_cast<int64_t*>(a.workspace);
  check_cuda(cudaMemcpyAsync(dev, host.data(), host.size() * sizeof(int64_t), cudaMemcpyHostToDevice,
                             static_cast<cudaStream_t>(a.stream)),
             "cudaMemcpyAsync");
  return {dev, dev + p.batch + 1};
}

inline int64_t longest_q(const AttentionParams& p) {
  int64_t n = 0;
  for (int64_t b = 0; b < p.batch; ++b) n = std::max(n, p.seq_q(b));
  return n;
}
inline int64_t longest_kv(const AttentionParams& p) {
  int64_t n = 0;
  for (int64_t b = 0; b < p.batch; ++b) n = std::max(n, p.seq_kv(b));
  return n;
}

}  // namespace kl::KL_TARGET::attention
