// attention_bwd v12: FlashAttention-2's backward schedule on CUDA cores. P is recomputed from the
// forward's LSE one 32 x 32 tile at a time in shared memory, never stored:
//   row_dot   D_i = dO_i . O_i, one warp per (query, head)
//   grad_kv   one block per (sequence, kv head, 32 keys): K and V stay in shared memory, dK and dV
//             in registers, while every query tile of every query head of the group that sees
//             those keys passes (found by bisection: causal blocks skip the queries before them).
//             Per tile: S = Q K^T, P = exp(scale S - LSE), dP = dO V^T, dS = P o (dP - D), then
//             dV += P^T dO and dK += scale dS^T Q. dQ += scale dS K is added to an fp32 copy of dQ
//             by atomicAdd (as many adds per element as key tiles see it; their order, and so
//             dQ's last bits, vary from run to run), then rounded by `dq_convert`.
// --deterministic: no atomics. `grad_kv` leaves dQ alone and `grad_q` (one block per sequence,
// head, 32 queries) walks the key tiles itself, recomputing S, P, dP and dS (the forward's two
// products again: 7 instead of 5 per tile, 40% more FLOPs) to sum dQ in registers in a fixed order.
#include "ops/attention/cuda/bwd_common.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using namespace rowwise;
using attention::Offsets;
using attention::Shape;
using attention::visible;
constexpr int kRows = 32, kKeys = 32, kThreads = 256, kWarps = kThreads / 32;
constexpr int kMaxDim = 256, kCols = kMaxDim / 8;  // a thread owns one row's columns c = t % 8 + 8n, n < kCols

// Shared memory: K [32][d + pad], V [32][dv + pad], Q [32][d + pad], dO [32][dv + pad] in the element
// type, then P and dS [32][33] and LSE and D [32] in fp32. Rows padded to an odd number of 4-byte
// words: the 32 lanes that each read their own key's element c hit 32 different banks.
template <class E> __host__ __device__ constexpr int pad() { return sizeof(E) == 4 ? 1 : 2; }
template <class E> __host__ __device__ size_t smem_bytes(int d, int dv) {
  return size_t(kKeys + kRows) * (d + dv + 2 * pad<E>()) * sizeof(E) + (2 * kRows * (kKeys + 1) + 2 * kRows) * sizeof(float);
}

template <class E> struct Tiles {
  E *k, *v, *q, *d_out;
  float *p, *ds, *lse, *d;
  int ks, vs;  // row strides of K/Q and V/dO
  __device__ Tiles(E* smem, const Shape& m) : ks(m.d + pad<E>()), vs(m.dv + pad<E>()) {
    k = smem, v = k + kKeys * ks, q = v + kKeys * vs, d_out = q + kRows * ks;
    p = reinterpret_cast<float*>(d_out + kRows * vs), ds = p + kRows * (kKeys + 1), lse = ds + kRows * (kKeys + 1), d = lse + kRows;
  }
};

struct Inputs {
  const void *q, *k, *v, *d_out;
  const float *lse, *d;  // D [h, total_q]
};

// `n` rows of `width` elements, rows `stride` apart in global memory, into a tile; zeros past `valid`.
template <class E>
__device__ __forceinline__ void load_rows(E* tile, int tile_stride, const E* src, int64_t stride, int width, int n, int64_t valid) {
  for (int e = threadIdx.x; e < n * width; e += kThreads) {
    const int r = e / width, c = e % width;
    tile[r * tile_stride + c] = r < valid ? src[r * stride + c] : from_f32<E>(0.0f);
  }
}

// K and V rows [j0, j0 + 32) of kv head g of sequence b into the tiles.
template <class E>
__device__ void load_kv(const Tiles<E>& t, const Inputs& in, const Shape& m, const Offsets& o, int b, int g, int64_t j0) {
  const int kv_heads = m.heads / m.group;
  const int64_t sk = o.kv[b + 1] - o.kv[b], token = o.kv[b] + j0;
  load_rows(t.k, t.ks, static_cast<const E*>(in.k) + (token * kv_heads + g) * m.d, int64_t{kv_heads} * m.d, m.d, kKeys, sk - j0);
  load_rows(t.v, t.vs, static_cast<const E*>(in.v) + (token * kv_heads + g) * m.dv, int64_t{kv_heads} * m.dv, m.dv, kKeys, sk - j0);
}

// Q, dO, LSE and D of queries [i0, i0 + 32) of head h of sequence b.
template <class E>
__device__ void load_q(const Tiles<E>& t, const Inputs& in, const Shape& m, const Offsets& o, int b, int h, int64_t i0) {
  const int64_t sq = o.q[b + 1] - o.q[b], token = o.q[b] + i0;
  load_rows(t.q, t.ks, static_cast<const E*>(in.q) + (token * m.heads + h) * m.d, int64_t{m.heads} * m.d, m.d, kRows, sq - i0);
  load_rows(t.d_out, t.vs, static_cast<const E*>(in.d_out) + (token * m.heads + h) * m.dv, int64_t{m.heads} * m.dv, m.dv, kRows,
            sq - i0);
  if (threadIdx.x < kRows) {
    const bool in_seq = i0 + threadIdx.x < sq;
    t.lse[threadIdx.x] = in_seq ? in.lse[h * m.total_q + token + threadIdx.x] : INFINITY;
    t.d[threadIdx.x] = in_seq ? in.d[h * m.total_q + token + threadIdx.x] : 0.0f;
  }
}

// P and dS of the tile (queries i0.., keys j0..) of sequence b: thread t takes key t % 32 and rows
// t / 32 + 8u, so a warp's lanes read 32 different K (and V) rows and one Q (and dO) row.
template <class E> __device__ void probabilities(const Tiles<E>& t, const Shape& m, int64_t sq, int64_t sk, int64_t i0, int64_t j0) {
  const int jj = threadIdx.x % 32;
  KL_UNROLL
  for (int u = 0; u < kRows / kWarps; ++u) {
    const int r = threadIdx.x / 32 + kWarps * u;
    int64_t first = 0, last = 0;
    if (i0 + r < sq) visible(m, sq, sk, i0 + r, first, last);
    float p = 0, ds = 0;
    if (j0 + jj >= first && j0 + jj < last) {
      float s = 0, dp = 0;
      for (int c = 0; c < m.d; ++c) s += to_f32(t.q[r * t.ks + c]) * to_f32(t.k[jj * t.ks + c]);
      for (int c = 0; c < m.dv; ++c) dp += to_f32(t.d_out[r * t.vs + c]) * to_f32(t.v[jj * t.vs + c]);
      p = expf(m.scale * s - t.lse[r]);
      ds = p * (dp - t.d[r]);
    }
    t.p[r * (kKeys + 1) + jj] = p;
    t.ds[r * (kKeys + 1) + jj] = ds;
  }
}

// kAtomicDq: also add scale dS K into dq_acc (fp32, [total_q, h, d]).
template <class E, bool kAtomicDq>
__global__ void __launch_bounds__(kThreads) grad_kv(Inputs in, E* __restrict__ dk, E* __restrict__ dv, float* __restrict__ dq_acc,
                                                    Shape m, Offsets o) {
  KL_DYNAMIC_SHARED(E, smem);
  const Tiles<E> t(smem, m);
  const int kv_heads = m.heads / m.group, b = blockIdx.y / kv_heads, g = blockIdx.y % kv_heads;
  const int64_t sq = o.q[b + 1] - o.q[b], sk = o.kv[b + 1] - o.kv[b], j0 = int64_t{blockIdx.x} * kKeys;
  if (j0 >= sk) return;  // the whole block
  load_kv(t, in, m, o, b, g, j0);
  int64_t lo, hi;
  attention::queries_seeing(m, sq, sk, j0, j0 + kKeys < sk ? j0 + kKeys : sk, lo, hi);
  const int kr = threadIdx.x / 8, cg = threadIdx.x % 8;  // this thread's key row and first column
  float acc_k[kCols] = {}, acc_v[kCols] = {};
  for (int h = g * m.group; h < (g + 1) * m.group; ++h)
    for (int64_t i0 = lo; i0 < hi; i0 += kRows) {
      __syncthreads();  // the previous tile is no longer read
      load_q(t, in, m, o, b, h, i0);
      __syncthreads();
      probabilities(t, m, sq, sk, i0, j0);
      __syncthreads();
      KL_NO_UNROLL  // rows outside, columns unrolled: 32 x 32 unrolled took 226-255 registers and 145 s of nvcc
      for (int r = 0; r < kRows; ++r) {
        const float ds = t.ds[r * (kKeys + 1) + kr], p = t.p[r * (kKeys + 1) + kr];
        KL_UNROLL
        for (int n = 0; n < kCols; ++n) {
          const int c = cg + 8 * n;
          if (c < m.d) acc_k[n] += ds * to_f32(t.q[r * t.ks + c]);
          if (c < m.dv) acc_v[n] += p * to_f32(t.d_out[r * t.vs + c]);
        }
      }
      if constexpr (kAtomicDq) {
        const int r = kr;  // now a query row: dQ[r][c] += scale sum_j dS[r][j] K[j][c]
        if (i0 + r < sq)
          for (int c = cg; c < m.d; c += 8) {
            float sum = 0;
            for (int jj = 0; jj < kKeys; ++jj) sum += t.ds[r * (kKeys + 1) + jj] * to_f32(t.k[jj * t.ks + c]);
            atomicAdd(&dq_acc[((o.q[b] + i0 + r) * m.heads + h) * m.d + c], m.scale * sum);
          }
      }
    }
  if (j0 + kr >= sk) return;
  const int64_t token = o.kv[b] + j0 + kr;
  KL_UNROLL
  for (int n = 0; n < kCols; ++n) {
    const int c = cg + 8 * n;
    if (c < m.d) dk[(token * kv_heads + g) * m.d + c] = from_f32<E>(m.scale * acc_k[n]);
    if (c < m.dv) dv[(token * kv_heads + g) * m.dv + c] = from_f32<E>(acc_v[n]);
  }
}

// --deterministic: dQ of 32 queries of one head, the key tiles in order, summed in registers.
template <class E>
__global__ void __launch_bounds__(kThreads) grad_q(Inputs in, E* __restrict__ dq, Shape m, Offsets o) {
  KL_DYNAMIC_SHARED(E, smem);
  const Tiles<E> t(smem, m);
  const int b = blockIdx.y / m.heads, h = blockIdx.y % m.heads, g = h / m.group;
  const int64_t sq = o.q[b + 1] - o.q[b], sk = o.kv[b + 1] - o.kv[b], i0 = int64_t{blockIdx.x} * kRows;
  if (i0 >= sq) return;  // the whole block
  load_q(t, in, m, o, b, h, i0);
  int64_t lo = sk, hi = 0;  // the keys any of the 32 queries sees
  for (int r = 0; r < kRows && i0 + r < sq; ++r) {
    int64_t first, last;
    visible(m, sq, sk, i0 + r, first, last);
    if (first < last) lo = first < lo ? first : lo, hi = last > hi ? last : hi;
  }
  const int r = threadIdx.x / 8, cg = threadIdx.x % 8;
  float acc[kCols] = {};
  for (int64_t j0 = lo / kKeys * kKeys; j0 < hi; j0 += kKeys) {
    __syncthreads();
    load_kv(t, in, m, o, b, g, j0);
    __syncthreads();
    probabilities(t, m, sq, sk, i0, j0);
    __syncthreads();
    KL_NO_UNROLL
    for (int jj = 0; jj < kKeys; ++jj) {
      const float ds = t.ds[r * (kKeys + 1) + jj];
      KL_UNROLL
      for (int n = 0; n < kCols; ++n)
        if (cg + 8 * n < m.d) acc[n] += ds * to_f32(t.k[jj * t.ks + cg + 8 * n]);
    }
  }
  if (i0 + r >= sq) return;
  const int64_t token = o.q[b] + i0 + r;
  KL_UNROLL
  for (int n = 0; n < kCols; ++n)
    if (cg + 8 * n < m.d) dq[(token * m.heads + h) * m.d + cg + 8 * n] = from_f32<E>(m.scale * acc[n]);
}

template <class E> void run(const AttentionParams& p, const Args& a) {
  const cudaStream_t stream = static_cast<cudaStream_t>(a.stream);
  const Offsets o = attention::upload_offsets(p, a);
  float *d, *dq_acc;
  attention::start_backward(p, a, static_cast<const E*>(a.in[3].data()), static_cast<const E*>(a.in[5].data()), d, dq_acc);
  const Inputs in{a.in[0].data(), a.in[1].data(), a.in[2].data(), a.in[5].data(), static_cast<const float*>(a.in[4].data()), d};
  E *dq = static_cast<E*>(a.out[0].data()), *dk = static_cast<E*>(a.out[1].data()), *dv = static_cast<E*>(a.out[2].data());
  const Shape m = attention::shape_of(p);
  const size_t smem = smem_bytes<E>(int(p.head_dim), int(p.head_dim_v));
  const dim3 kv_grid(unsigned((attention::longest_kv(p) + kKeys - 1) / kKeys), unsigned(p.batch * p.kv_heads));
  if (p.deterministic) {
    allow_dynamic_smem<grad_kv<E, false>>(int(smem_bytes<E>(kMaxDim, kMaxDim)));
    allow_dynamic_smem<grad_q<E>>(int(smem_bytes<E>(kMaxDim, kMaxDim)));
    KL_LAUNCH((grad_kv<E, false>), kv_grid, kThreads, smem, stream, in, dk, dv, static_cast<float*>(nullptr), m, o);
    const dim3 q_grid(unsigned((attention::longest_q(p) + kRows - 1) / kRows), unsigned(p.batch * p.heads));
    KL_LAUNCH(grad_q<E>, q_grid, kThreads, smem, stream, in, dq, m, o);
    return;
  }
  allow_dynamic_smem<grad_kv<E, true>>(int(smem_bytes<E>(kMaxDim, kMaxDim)));
  KL_LAUNCH((grad_kv<E, true>), kv_grid, kThreads, smem, stream, in, dk, dv, dq_acc, m, o);
  attention::finish_atomic_dq<E>(p, a, dq_acc);
}

void launch(const AttentionParams& p, const Args& a) {
  with_element(p.dtype, [&](auto e) { run<decltype(e)>(p, a); });
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<AttentionParams> r;
  r.op = "attention_bwd";
  r.name = "cuda_flash2";
  r.note = "FlashAttention-2's backward on CUDA cores: a block per 32 keys keeps K, V, dK, dV on chip while the query tiles "
           "that see them pass, P recomputed from the LSE (never stored), dQ by fp32 atomics; --deterministic: dQ by its own "
           "pass over the keys (40% more FLOPs, no atomics, the same bits every run)";
  r.supports = [](const AttentionParams& p) -> Reason {
    if (p.head_dim > kMaxDim || p.head_dim_v > kMaxDim) return "head dims up to 256 (a thread holds d/8 columns of dK, dV, dQ)";
    return attention::heads_must_fit_grid(p);
  };
  r.workspace_bytes = attention::bwd_workspace_bytes;
  r.configs = {{.name = "32x32_256",
                .threads = kThreads,
                .dynamic_smem = int64_t(smem_bytes<__half>(128, 128)),  // at d = dv = 128 in fp16/bf16; 137.6 KiB at 256 in fp32
                .kernels = {{for_elements([](auto e) { return KL_KERNEL(attention::row_dot<decltype(e)>); }), {"shfl.sync.bfly"}, {"SHFL.BFLY"}},
                            {for_elements([](auto e) { return KL_KERNEL(grad_kv<decltype(e), true>); }),
                             {"bar.sync", "ex2.approx", "atom.global.add.f32"},
                             {"BAR.SYNC", "MUFU.EX2", "REDG.E.ADD.F32"}},
                            {for_elements([](auto e) { return KL_KERNEL(grad_kv<decltype(e), false>); }),
                             {"bar.sync", "ex2.approx"},
                             {"BAR.SYNC", "MUFU.EX2"}},
                            {for_elements([](auto e) { return KL_KERNEL(grad_q<decltype(e)>); }), {"bar.sync", "ex2.approx"},
                             {"BAR.SYNC", "MUFU.EX2"}},
                            {for_elements([](auto e) { return KL_KERNEL(attention::dq_convert<decltype(e)>); }), {}, {}}},
                .run = launch}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
