// attention v03: FlashAttention-2's forward on tensor cores. A block of 4 warps takes 64 queries of
// one (sequence, head), 16 rows per warp, and walks the keys a tile at a time (64 keys; 32 when a
// head dim passes 128, so that two K and V stages fit beside Q):
//   S = Q K^T     mma.sync m16n8k16, Q and K fragments by ldmatrix from swizzled shared memory
//   online softmax on S's accumulators in registers (row max and sum within each quad of lanes),
//                 exp2 with scale * log2(e) folded into one multiply
//   O += P V      P converted in registers straight into mma's A fragments (the S accumulator
//                 layout of two adjacent n8 tiles is the A layout of one k16 step), V by
//                 ldmatrix.trans
// K and V are double-buffered: tile t+1 is copied global -> shared by cp.async while tile t is
// multiplied. Key tiles the mask hides from all 64 queries are never loaded (causal: about half),
// and only tiles the mask cuts are masked element by element. GQA by indexing (query head h
// reads kv head h / group); variable length by the cu_seqlens offsets. Shared memory per block:
// Q 64 x d, 2 x (K keys x d + V keys x dv) halves: 40 KB at d 64, 80 KB at d 128, 96 KB at d 256.
// O is staged over the warp's own Q rows and leaves in 16-byte chunks. HBM traffic as v02's: Q
// and O once, K and V once per 64 queries.
#include "ops/attention/cuda/mma_common.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using namespace rowwise;
using attention::Chunk;
using attention::Offsets;
using attention::Shape;
using attention::mma;
using attention::swz;
using attention::visible;

constexpr int kWarps = 4, kThreads = 32 * kWarps, kRows = 16 * kWarps;
constexpr float kLog2e = 1.4426950408889634f, kLn2 = 0.6931471805599453f;

template <int D, int DV> struct Tile {
  static constexpr int kKeys = D > 128 || DV > 128 ? 32 : 64;
  static constexpr int kQc = D / 8, kVc = DV / 8;  // chunks per row
  static constexpr size_t kSmem = (size_t(kRows) * kQc + 2 * size_t(kKeys) * (kQc + kVc)) * sizeof(Chunk);
};

template <class E>
__device__ __forceinline__ void load_rows(Chunk* tile, const E* __restrict__ src, int64_t stride, int rows, int chunks, int valid) {
  attention::load_rows<kThreads>(tile, src, stride, rows, chunks, valid);
}

template <class E, int D, int DV>
__global__ void __launch_bounds__(kThreads) flash2(const E* __restrict__ q, const E* __restrict__ k, const E* __restrict__ v,
                                                   E* __restrict__ out, float* __restrict__ lse, Shape m, Offsets o) {
  using T = Tile<D, DV>;
  constexpr int kKeys = T::kKeys, kQc = T::kQc, kVc = T::kVc, kSn = kKeys / 8, kOn = DV / 8;
  KL_DYNAMIC_SHARED(Chunk, smem);
  const int b = blockIdx.y / m.heads, h = blockIdx.y % m.heads, g = h / m.group, kv_heads = m.heads / m.group;
  const int64_t sq = o.q[b + 1] - o.q[b], sk = o.kv[b + 1] - o.kv[b], i0 = int64_t{blockIdx.x} * kRows;
  if (i0 >= sq) return;  // the whole block
  // Q, then two stages of (K tile, V tile).
  Chunk* sq_tile = smem;
  const auto sk_tile = [&](int stage) { return smem + kRows * kQc + stage * kKeys * (kQc + kVc); };
  const auto sv_tile = [&](int stage) { return sk_tile(stage) + kKeys * kQc; };
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, gid = lane / 4, tid = lane % 4;
  const int rows = int(sq - i0 < kRows ? sq - i0 : kRows);

  // The keys any query of the block sees [lo, hi), and those all of them see [all_lo, all_hi).
  int64_t lo = sk, hi = 0, all_lo = 0, all_hi = sk;
  for (int r = 0; r < rows; ++r) {
    int64_t first, last;
    visible(m, sq, sk, i0 + r, first, last);
    if (first < last) lo = first < lo ? first : lo, hi = last > hi ? last : hi;
    all_lo = first > all_lo ? first : all_lo, all_hi = last < all_hi ? last : all_hi;
  }
  // This lane's two rows (gid and gid + 8 of its warp's 16) and the keys each sees.
  int64_t first[2], last[2];
  KL_UNROLL
  for (int hf = 0; hf < 2; ++hf) {
    const int row = 16 * warp + gid + 8 * hf;
    first[hf] = last[hf] = 0;
    if (row < rows) visible(m, sq, sk, i0 + row, first[hf], last[hf]);
  }

  const E* k_head = k + (o.kv[b] * kv_heads + g) * D;
  const E* v_head = v + (o.kv[b] * kv_heads + g) * DV;
  const int64_t kv_stride = int64_t{kv_heads} * D, v_stride = int64_t{kv_heads} * DV;
  const int64_t t0 = lo / kKeys, t1 = (hi + kKeys - 1) / kKeys;
  load_rows(sq_tile, q + ((o.q[b] + i0) * m.heads + h) * D, int64_t{m.heads} * D, kRows, kQc, rows);
  if (t0 < t1) {
    const int keys = int(sk - t0 * kKeys < kKeys ? sk - t0 * kKeys : kKeys);
    load_rows(sk_tile(0), k_head + t0 * kKeys * kv_stride, kv_stride, kKeys, kQc, keys);
    load_rows(sv_tile(0), v_head + t0 * kKeys * v_stride, v_stride, kKeys, kVc, keys);
  }
  kl::ptx::cp_async_commit();

  const float scale2 = m.scale * kLog2e;  // scores in log2 units: exp(x) = exp2(x log2 e)
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0, 0}, acc[kOn][4] = {};
  // ldmatrix.x4 addressing: lanes 0-7 rows 0-7 of chunk 0, 8-15 rows 8-15 of chunk 0, 16-23 rows
  // 0-7 of chunk 1, 24-31 rows 8-15 of chunk 1 (A's fragment order, and two B fragments of .trans).
  const int lrow = lane % 8 + 8 * ((lane / 8) % 2), lchunk = lane / 16;
  for (int64_t t = t0; t < t1; ++t) {
    const int st = int((t - t0) % 2);
    kl::ptx::cp_async_wait<0>();
    __syncthreads();  // tile t is in for every thread; the stage tile t-1 used is free
    if (t + 1 < t1) {
      const int64_t j1 = (t + 1) * kKeys;
      const int keys = int(sk - j1 < kKeys ? sk - j1 : kKeys);
      load_rows(sk_tile(1 - st), k_head + j1 * kv_stride, kv_stride, kKeys, kQc, keys);
      load_rows(sv_tile(1 - st), v_head + j1 * v_stride, v_stride, kKeys, kVc, keys);
    }
    kl::ptx::cp_async_commit();

    float s[kSn][4] = {};  // S = Q K^T for the warp's 16 rows and the tile's keys
    KL_UNROLL
    for (int kk = 0; kk < D / 16; ++kk) {
      uint32_t a[4];
      const int qr = 16 * warp + lrow;
      kl::ptx::ldmatrix_x4(a, &sq_tile[qr * kQc + swz(qr, 2 * kk + lchunk)]);
      KL_UNROLL
      for (int j = 0; j < kSn; j += 2) {
        // K rows are B's columns: matrices (keys 8j.., chunk 2kk), (8j.., 2kk+1), (8j+8.., 2kk), (8j+8.., 2kk+1).
        const int kr = 8 * j + lane % 8 + 8 * (lane / 16), kc = 2 * kk + (lane / 8) % 2;
        uint32_t x[4];
        kl::ptx::ldmatrix_x4(x, &sk_tile(st)[kr * kQc + swz(kr, kc)]);
        const uint32_t b0[2] = {x[0], x[1]}, b1[2] = {x[2], x[3]};
        mma<E>(s[j], a, b0);
        mma<E>(s[j + 1], a, b1);
      }
    }

    const int64_t j0 = t * kKeys;
    const bool cut = j0 < all_lo || j0 + kKeys > all_hi;  // some query of the block misses some key of the tile
    uint32_t p[kSn / 2][4];                               // P as the A fragments of O += P V
    KL_UNROLL
    for (int hf = 0; hf < 2; ++hf) {
      float tile_max = -INFINITY;
      KL_UNROLL
      for (int j = 0; j < kSn; ++j)
        KL_UNROLL
        for (int e = 0; e < 2; ++e) {
          const int64_t key = j0 + 8 * j + 2 * tid + e;
          float& x = s[j][2 * hf + e];
          x = cut && (key < first[hf] || key >= last[hf]) ? -INFINITY : x * scale2;
          tile_max = fmaxf(tile_max, x);
        }
      tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
      tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
      const float new_max = fmaxf(row_max[hf], tile_max);
      const float base = new_max == -INFINITY ? 0.0f : new_max;  // a row that has seen no key yet
      const float rescale = exp2f(row_max[hf] - base);
      float sum = 0;
      KL_UNROLL
      for (int j = 0; j < kSn; ++j)
        KL_UNROLL
        for (int e = 0; e < 2; ++e) {
          float& x = s[j][2 * hf + e];
          x = exp2f(x - base);
          sum += x;
        }
      row_sum[hf] = row_sum[hf] * rescale + sum;  // this lane's share; the quad adds them at the end
      row_max[hf] = new_max;
      KL_UNROLL
      for (int n = 0; n < kOn; ++n) acc[n][2 * hf] *= rescale, acc[n][2 * hf + 1] *= rescale;
    }
    KL_UNROLL
    for (int kk = 0; kk < kSn / 2; ++kk) attention::a_from_accumulators<E>(p[kk], s[2 * kk], s[2 * kk + 1]);
    KL_UNROLL
    for (int kk = 0; kk < kSn / 2; ++kk)
      KL_UNROLL
      for (int n = 0; n < kOn; n += 2) {
        const int vr = 16 * kk + lrow, vc = n + lchunk;
        uint32_t x[4];
        kl::ptx::ldmatrix_x4_trans(x, &sv_tile(st)[vr * kVc + swz(vr, vc)]);
        const uint32_t b0[2] = {x[0], x[1]}, b1[2] = {x[2], x[3]};
        mma<E>(acc[n], p[kk], b0);
        mma<E>(acc[n + 1], p[kk], b1);
      }
  }
  // O through shared memory, so that it leaves as whole 16-byte chunks: each warp writes its
  // fragments over its own 16 Q rows (read by no other warp), then stores those rows.
  __syncwarp();
  Chunk* o_rows = sq_tile + 16 * warp * kQc;
  float inv[2];
  KL_UNROLL
  for (int hf = 0; hf < 2; ++hf) {
    float sum = row_sum[hf];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    inv[hf] = sum > 0 ? 1.0f / sum : 0.0f;
    const int row = 16 * warp + gid + 8 * hf;
    if (tid == 0 && row < rows) lse[h * m.total_q + o.q[b] + i0 + row] = sum > 0 ? row_max[hf] * kLn2 + logf(sum) : INFINITY;
  }
  attention::stage_fragments<E>(o_rows, kQc, acc, inv);
  __syncwarp();
  const int warp_rows = rows - 16 * warp < 16 ? rows - 16 * warp : 16;
  attention::store_rows(o_rows, kQc, kVc, out + ((o.q[b] + i0 + 16 * warp) * m.heads + h) * DV, int64_t{m.heads} * DV, warp_rows);
}

template <class E, int D, int DV> void run(const AttentionParams& p, const Args& a) {
  constexpr size_t smem = Tile<D, DV>::kSmem;
  const Offsets o = attention::upload_offsets(p, a);
  allow_dynamic_smem<flash2<E, D, DV>>(int(smem));
  const dim3 grid(unsigned((attention::longest_q(p) + kRows - 1) / kRows), unsigned(p.batch * p.heads));
  KL_LAUNCH((flash2<E, D, DV>), grid, kThreads, smem, a.stream, static_cast<const E*>(a.in[0].data()),
            static_cast<const E*>(a.in[1].data()), static_cast<const E*>(a.in[2].data()), static_cast<E*>(a.out[0].data()),
            static_cast<float*>(a.out[1].data()), attention::shape_of(p), o);
}

// The (d, dv) pairs compiled: FlashAttention's head dims and DeepSeek's 192/128.
template <class E> void run_dims(const AttentionParams& p, const Args& a) {
  if (p.head_dim == 64 && p.head_dim_v == 64) run<E, 64, 64>(p, a);
  else if (p.head_dim == 128 && p.head_dim_v == 128) run<E, 128, 128>(p, a);
  else if (p.head_dim == 256 && p.head_dim_v == 256) run<E, 256, 256>(p, a);
  else run<E, 192, 128>(p, a);
}

void launch(const AttentionParams& p, const Args& a) {
  if (p.dtype == DType::f16) run_dims<__half>(p, a);
  else run_dims<__nv_bfloat16>(p, a);
}

template <class E> std::vector<KernelRef> kernels_of() {
  return {KL_KERNEL(flash2<E, 64, 64>), KL_KERNEL(flash2<E, 128, 128>), KL_KERNEL(flash2<E, 256, 256>),
          KL_KERNEL(flash2<E, 192, 128>)};
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<AttentionParams> r;
  r.op = "attention";
  r.name = "cuda_flash2_mma";
  r.note = "FlashAttention-2 on tensor cores: 64 queries per block (16 per warp), S = QK^T and O += PV by mma.sync m16n8k16 "
           "on ldmatrix fragments, P kept in registers, K/V double-buffered by cp.async, causal tiles skipped, GQA by indexing";
  r.supports = [](const AttentionParams& p) -> Reason {
    if (p.dtype != DType::f16 && p.dtype != DType::bf16) return "a tensor-core rung: fp16 or bf16";
    const bool dims = (p.head_dim == p.head_dim_v && (p.head_dim == 64 || p.head_dim == 128 || p.head_dim == 256)) ||
                      (p.head_dim == 192 && p.head_dim_v == 128);
    if (!dims) return "head dims 64, 128, 256 (d = dv) and 192/128: each pair is compiled";
    return attention::heads_must_fit_grid(p);
  };
  r.workspace_bytes = [](const AttentionParams& p) { return attention::offset_bytes(p); };
  std::vector<KernelRef> kernels = kernels_of<__half>();
  for (const KernelRef& k : kernels_of<__nv_bfloat16>()) kernels.push_back(k);
  r.configs = {{.name = "64q_64k_4warps",
                .threads = kThreads,
                .dynamic_smem = int64_t(Tile<128, 128>::kSmem),  // at d = dv = 128: 80 KB
                .kernels = {{kernels,
                             {"mma.sync.aligned.m16n8k16.row.col.f32", "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
                              "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16", "cp.async.cg.shared.global", "ex2.approx"},
                             {"HMMA.16816.F32", "LDSM.16.M88.4", "LDSM.16.MT88.4", "LDGSTS.E.BYPASS.128", "MUFU.EX2"}}},
                .run = launch}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
