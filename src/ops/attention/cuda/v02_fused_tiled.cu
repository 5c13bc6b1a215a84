// attention v02: one kernel, FlashAttention's schedule on CUDA cores. A block of 4 warps takes 32
// queries of one (sequence, head) (8 rows per warp) with its Q tile in shared memory, and walks the
// keys 32 at a time: the block stages the K and V tile in shared memory, each lane scores one key
// for each of its warp's rows, and the online softmax keeps a running max m, sum l and output per
// row (rescaled by exp(m_old - m_new) when the max grows), so S and P live one 32 x 32 tile at a
// time in shared memory and never reach HBM. Key tiles the mask hides from all 32 queries are not
// loaded (causal: about half). HBM traffic: Q and O once, K and V once per query tile.
#include "ops/attention/cuda/attention_common.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using namespace rowwise;
using attention::Offsets;
using attention::Shape;
using attention::visible;
constexpr int kRows = 32, kKeys = 32, kWarps = 4, kThreads = 32 * kWarps, kRowsPerWarp = kRows / kWarps;
constexpr int kMaxDim = 256;                // d and dv: a lane holds dv / 32 outputs per row
constexpr int kOutPerLane = kMaxDim / 32;

// Shared memory: Q [kRows][d + pad], K [kKeys][d + pad], V [kKeys][dv + pad] in the element type, then
// P [kRows][kKeys] in fp32. The pad makes a K row an odd number of 4-byte words, so the 32 lanes
// that each read their own key's element c hit 32 different banks.
template <class E> __host__ __device__ constexpr int pad() { return sizeof(E) == 4 ? 1 : 2; }
template <class E> __host__ __device__ size_t smem_bytes(int d, int dv) {
  return (size_t(kRows + kKeys) * (d + pad<E>()) + size_t(kKeys) * (dv + pad<E>())) * sizeof(E) + size_t(kRows) * kKeys * 4;
}

template <class E>
__global__ void __launch_bounds__(kThreads) fused(const E* __restrict__ q, const E* __restrict__ k, const E* __restrict__ v,
                                                  E* __restrict__ out, float* __restrict__ lse, Shape m, Offsets o) {
  KL_DYNAMIC_SHARED(E, smem);
  const int b = blockIdx.y / m.heads, h = blockIdx.y % m.heads, g = h / m.group, kv_heads = m.heads / m.group;
  const int64_t sq = o.q[b + 1] - o.q[b], sk = o.kv[b + 1] - o.kv[b], i0 = int64_t{blockIdx.x} * kRows;
  if (i0 >= sq) return;  // the whole block
  const int qs = m.d + pad<E>(), vs = m.dv + pad<E>();
  E* sq_tile = smem;
  E* sk_tile = sq_tile + kRows * qs;
  E* sv_tile = sk_tile + kKeys * qs;
  float* sp = reinterpret_cast<float*>(sv_tile + kKeys * vs);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, rows = int(sq - i0 < kRows ? sq - i0 : kRows);

  for (int e = threadIdx.x; e < kRows * m.d; e += kThreads) {  // Q tile, rows past the sequence as zeros
    const int r = e / m.d, c = e % m.d;
    sq_tile[r * qs + c] = r < rows ? q[((o.q[b] + i0 + r) * m.heads + h) * m.d + c] : from_f32<E>(0.0f);
  }
  int64_t lo = sk, hi = 0;  // the keys any query of the tile sees
  for (int r = 0; r < rows; ++r) {
    int64_t first, last;
    visible(m, sq, sk, i0 + r, first, last);
    if (first < last) lo = first < lo ? first : lo, hi = last > hi ? last : hi;
  }
  float row_max[kRowsPerWarp], row_sum[kRowsPerWarp], acc[kRowsPerWarp][kOutPerLane];
  KL_UNROLL
  for (int r = 0; r < kRowsPerWarp; ++r) {
    row_max[r] = -INFINITY, row_sum[r] = 0;
    KL_UNROLL
    for (int c = 0; c < kOutPerLane; ++c) acc[r][c] = 0;
  }
  for (int64_t j0 = lo / kKeys * kKeys; j0 < hi; j0 += kKeys) {
    const int keys = int(sk - j0 < kKeys ? sk - j0 : kKeys);
    __syncthreads();  // the previous tile's K, V and P are no longer read
    for (int e = threadIdx.x; e < kKeys * m.d; e += kThreads) {
      const int r = e / m.d, c = e % m.d;
      sk_tile[r * qs + c] = r < keys ? k[((o.kv[b] + j0 + r) * kv_heads + g) * m.d + c] : from_f32<E>(0.0f);
    }
    for (int e = threadIdx.x; e < kKeys * m.dv; e += kThreads) {
      const int r = e / m.dv, c = e % m.dv;
      sv_tile[r * vs + c] = r < keys ? v[((o.kv[b] + j0 + r) * kv_heads + g) * m.dv + c] : from_f32<E>(0.0f);
    }
    __syncthreads();
    KL_UNROLL
    for (int r = 0; r < kRowsPerWarp; ++r) {  // this warp's rows: lane `lane` scores key j0 + lane
      const int row = warp * kRowsPerWarp + r;
      int64_t first = 0, last = 0;
      if (row < rows) visible(m, sq, sk, i0 + row, first, last);
      const int64_t j = j0 + lane;
      float s = -INFINITY;
      if (lane < keys && j >= first && j < last) {
        s = 0;
        for (int c = 0; c < m.d; ++c) s += to_f32(sq_tile[row * qs + c]) * to_f32(sk_tile[lane * qs + c]);
        s *= m.scale;
      }
      const float tile_max = warp_reduce(s, Max{});
      float p = 0;
      if (tile_max != -INFINITY) {  // the online softmax: rescale what came before to the new max
        const float new_max = fmaxf(row_max[r], tile_max), rescale = expf(row_max[r] - new_max);
        p = s == -INFINITY ? 0.0f : expf(s - new_max);
        row_sum[r] = row_sum[r] * rescale + warp_reduce(p, Sum{});
        KL_UNROLL
        for (int c = 0; c < kOutPerLane; ++c) acc[r][c] *= rescale;
        row_max[r] = new_max;
      }
      sp[row * kKeys + lane] = p;
      __syncwarp();
      attention::add_tile_pv(acc[r], sp + row * kKeys, sv_tile, vs, keys, lane, m.dv);
    }
  }
  KL_UNROLL
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int row = warp * kRowsPerWarp + r;
    if (row >= rows) continue;
    const int64_t token = o.q[b] + i0 + row;
    const float inv = row_sum[r] > 0 ? 1.0f / row_sum[r] : 0.0f;
    KL_UNROLL
    for (int c = 0; c < kOutPerLane; ++c)
      if (lane + 32 * c < m.dv) out[(token * m.heads + h) * m.dv + lane + 32 * c] = from_f32<E>(acc[r][c] * inv);
    if (lane == 0) lse[h * m.total_q + token] = row_sum[r] > 0 ? row_max[r] + logf(row_sum[r]) : INFINITY;
  }
}

template <class E> void run(const AttentionParams& p, const Args& a) {
  const Offsets o = attention::upload_offsets(p, a);
  allow_dynamic_smem<fused<E>>(int(smem_bytes<E>(kMaxDim, kMaxDim)));
  const dim3 grid(unsigned((attention::longest_q(p) + kRows - 1) / kRows), unsigned(p.batch * p.heads));
  KL_LAUNCH(fused<E>, grid, kThreads, smem_bytes<E>(int(p.head_dim), int(p.head_dim_v)), a.stream,
            static_cast<const E*>(a.in[0].data()), static_cast<const E*>(a.in[1].data()), static_cast<const E*>(a.in[2].data()),
            static_cast<E*>(a.out[0].data()), static_cast<float*>(a.out[1].data()), attention::shape_of(p), o);
}

void launch(const AttentionParams& p, const Args& a) {
  with_element(p.dtype, [&](auto e) { run<decltype(e)>(p, a); });
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<AttentionParams> r;
  r.op = "attention";
  r.name = "cuda_fused_tiled";
  r.note = "one kernel per (sequence, head, 32 queries) with the online softmax over 32-key tiles in shared memory: S and P never "
           "reach HBM, masked key tiles are skipped, K and V read once per query tile";
  r.supports = [](const AttentionParams& p) -> Reason {
    if (p.head_dim > kMaxDim || p.head_dim_v > kMaxDim) return "head dims up to 256 (a lane holds dv/32 outputs per row)";
    return attention::heads_must_fit_grid(p);
  };
  r.workspace_bytes = [](const AttentionParams& p) { return attention::offset_bytes(p); };
  r.configs = {{.name = "32x32_128",
                .threads = kThreads,
                .dynamic_smem = int64_t(smem_bytes<__half>(128, 128)),  // at d = dv = 128 in fp16/bf16; 100.4 KiB at 256 in fp32
                .kernels = {{for_elements([](auto e) { return KL_KERNEL(fused<decltype(e)>); }),
                             {"bar.sync", "shfl.sync.bfly", "ex2.approx"},
                             {"BAR.SYNC", "SHFL.BFLY", "MUFU.EX2"}}},
                .run = launch}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
