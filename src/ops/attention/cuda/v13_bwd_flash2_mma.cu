// attention_bwd v13: FlashAttention-2's backward on tensor cores (mma.sync m16n8k16, ldmatrix from
// swizzled tiles). After `row_dot` (D = rowsum(dO o O)):
//   grad_kv   one block of 4 warps per (sequence, kv head, 64 keys), 16 keys per warp. K and V stay
//             in shared memory, dK and dV in registers, while every 32-query tile of every query head
//             of the group that sees those keys passes (found by bisection; Q, dO, LSE and D double-
//             buffered by cp.async). The warp computes the transposed products, keys in rows:
//               S^T = K Q^T, dP^T = V dO^T, P^T = exp(scale S^T - LSE), dS^T = P^T o (dP^T - D)
//             so that P^T and dS^T are already the A fragments of dV += P^T dO and dK += dS^T Q
//             (nothing is transposed through shared memory for them). dS^T goes to shared memory
//             once, for dQ += scale dS K (ldmatrix.trans gives dS's A fragments), which each warp
//             adds to a quarter of dQ's columns in an fp32 copy by atomics; `dq_convert` rounds it.
// --deterministic: `grad_kv` leaves dQ alone and `grad_q` (a block per sequence, head and 64
// queries, 16 per warp, K and V double-buffered) walks the key tiles in order: S = Q K^T and
// dP = dO V^T again (7 products per tile instead of 5), dS in registers as the A fragments of
// dQ += dS K, summed in registers in a fixed order: no atomics, the same bits every run.
// Head dims 64 and 128: at 256 (and 192/128) dK and dV alone would take 256 (160) of a thread's 255
// registers; ptxas spills them.
#include "ops/attention/cuda/bwd_common.cuh"
#include "ops/attention/cuda/mma_common.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using namespace rowwise;
using attention::a_from_accumulators;
using attention::Chunk;
using attention::mma;
using attention::Offsets;
using attention::Shape;
using attention::swz;
using attention::visible;

constexpr int kWarps = 4, kThreads = 32 * kWarps;
constexpr int kKeys = 16 * kWarps, kRows = 32;  // grad_kv: keys per block, queries per tile
constexpr int kQRows = 16 * kWarps;  // grad_q: queries per block
constexpr float kLog2e = 1.4426950408889634f;

// dS^T [64 keys][32 queries] in 4-chunk (64-byte) rows: chunk c of row r at c ^ ((r / 2) & 3), so
// that the 8 rows of an ldmatrix phase, and a warp's 8 rows x 4 words of stores, hit 32 banks.
__device__ __forceinline__ int swz4(int r, int c) { return c ^ ((r >> 1) & 3); }

struct Inputs {
  const void *q, *k, *v, *d_out;
  const float *lse, *d;  // [h, total_q] each
};

template <int D, int DV> struct KvTiles {
  static constexpr int kQc = D / 8, kVc = DV / 8;
  static constexpr int kStage = kRows * (kQc + kVc);  // chunks of a (Q, dO) stage
  static constexpr size_t kSmem =
      (size_t(kKeys) * (kQc + kVc) + 2 * kStage + kKeys * kRows / 8) * sizeof(Chunk) + 2 * 2 * kRows * sizeof(float);
  Chunk *k, *v, *stages, *ds;
  float* rows;  // per stage: LSE * log2(e) [32], then D [32]
  __device__ explicit KvTiles(Chunk* smem)
      : k(smem), v(k + kKeys * kQc), stages(v + kKeys * kVc), ds(stages + 2 * kStage),
        rows(reinterpret_cast<float*>(ds + kKeys * kRows / 8)) {}
  __device__ Chunk* q(int st) const { return stages + st * kStage; }
  __device__ Chunk* d_out(int st) const { return stages + st * kStage + kRows * kQc; }
  __device__ float* lse2(int st) const { return rows + st * 2 * kRows; }
  __device__ float* dd(int st) const { return rows + st * 2 * kRows + kRows; }
};

// `rows` query rows from i0 of head h of sequence b: Q and dO by cp.async, LSE (in log2 units) and
// D by plain loads; past the sequence Q and dO are zero, LSE infinite (P = 0) and D zero.
template <class E, int D, int DV>
__device__ void load_queries(Chunk* q_tile, Chunk* do_tile, float* lse2, float* dd, const Inputs& in, const Shape& m,
                             const Offsets& o, int b, int h, int64_t i0, int rows) {
  const int64_t sq = o.q[b + 1] - o.q[b], token = o.q[b] + i0;
  const int valid = int(sq - i0 < rows ? sq - i0 : rows);
  attention::load_rows<kThreads>(q_tile, static_cast<const E*>(in.q) + (token * m.heads + h) * D, int64_t{m.heads} * D, rows, D / 8,
                                 valid);
  attention::load_rows<kThreads>(do_tile, static_cast<const E*>(in.d_out) + (token * m.heads + h) * DV, int64_t{m.heads} * DV, rows,
                                 DV / 8, valid);
  for (int r = threadIdx.x; r < rows; r += kThreads) {
    lse2[r] = r < valid ? in.lse[h * m.total_q + token + r] * kLog2e : INFINITY;
    dd[r] = r < valid ? in.d[h * m.total_q + token + r] : 0.0f;
  }
}

// Whether the mask hides some key of [j0, j0 + keys) from some query of [i0, i1) (keys past the
// sequence count as hidden): queries' first and last keys never decrease with their position.
__device__ __forceinline__ bool mask_cuts(const Shape& m, int64_t sq, int64_t sk, int64_t i0, int64_t i1, int64_t j0, int keys) {
  int64_t first, last, first_end, last_end;
  visible(m, sq, sk, i0, first, last);
  visible(m, sq, sk, i1 - 1, first_end, last_end);
  return j0 < first_end || j0 + keys > last;
}

// Sets x to -infinity where key `key` is hidden from query `query`.
__device__ __forceinline__ void mask(float& x, const Shape& m, int64_t sq, int64_t sk, int64_t query, int64_t key) {
  int64_t first, last;
  visible(m, sq, sk, query, first, last);
  if (key < first || key >= last) x = -INFINITY;
}

// The 16 x 8N product of A rows (ldmatrix) and B rows (ldmatrix, as B's columns) over `depth`:
// C[r][n] = sum_c A[a_row0 + r][c] B[n][c], A and B swizzled tiles of `chunks` chunks a row.
template <class E, int N>
__device__ __forceinline__ void rows_times_rows(float (&c)[N][4], const Chunk* a_tile, int a_row0, const Chunk* b_tile, int chunks,
                                                int depth) {
  const int lane = threadIdx.x % 32, lrow = lane % 8 + 8 * ((lane / 8) % 2), lchunk = lane / 16;
  for (int kk = 0; kk < depth / 16; ++kk) {
    uint32_t a[4];
    const int ar = a_row0 + lrow;
    kl::ptx::ldmatrix_x4(a, &a_tile[ar * chunks + swz(ar, 2 * kk + lchunk)]);
    KL_UNROLL
    for (int j = 0; j < N; j += 2) {
      const int br = 8 * j + lane % 8 + 8 * (lane / 16), bc = 2 * kk + (lane / 8) % 2;
      uint32_t x[4];
      kl::ptx::ldmatrix_x4(x, &b_tile[br * chunks + swz(br, bc)]);
      const uint32_t b0[2] = {x[0], x[1]}, b1[2] = {x[2], x[3]};
      mma<E>(c[j], a, b0);
      mma<E>(c[j + 1], a, b1);
    }
  }
}

// acc += A B for A in registers (K/16 k16 steps) and B the rows [0, K) of a swizzled tile read by
// ldmatrix.trans (k along the rows: a row-major K x 8N tile of `chunks` chunks a row).
template <class E, int K, int N>
__device__ __forceinline__ void regs_times_tile(float (&acc)[N][4], const uint32_t (&a)[K / 16][4], const Chunk* b_tile, int chunks) {
  const int lane = threadIdx.x % 32, lrow = lane % 8 + 8 * ((lane / 8) % 2), lchunk = lane / 16;
  KL_UNROLL
  for (int kk = 0; kk < K / 16; ++kk)
    KL_UNROLL
    for (int n = 0; n < N; n += 2) {
      const int br = 16 * kk + lrow, bc = n + lchunk;
      uint32_t x[4];
      kl::ptx::ldmatrix_x4_trans(x, &b_tile[br * chunks + swz(br, bc)]);
      const uint32_t b0[2] = {x[0], x[1]}, b1[2] = {x[2], x[3]};
      mma<E>(acc[n], a[kk], b0);
      mma<E>(acc[n + 1], a[kk], b1);
    }
}

// kAtomicDq: also add scale dS K into dq_acc (fp32, [total_q, h, d]).
template <class E, int D, int DV, bool kAtomicDq>
__global__ void __launch_bounds__(kThreads) grad_kv(Inputs in, E* __restrict__ dk, E* __restrict__ dv, float* __restrict__ dq_acc,
                                                    Shape m, Offsets o) {
  using T = KvTiles<D, DV>;
  constexpr int kQc = T::kQc, kVc = T::kVc, kSn = kRows / 8;
  KL_DYNAMIC_SHARED(Chunk, smem);
  const T t(smem);
  const int kv_heads = m.heads / m.group, b = blockIdx.y / kv_heads, g = blockIdx.y % kv_heads;
  const int64_t sq = o.q[b + 1] - o.q[b], sk = o.kv[b + 1] - o.kv[b], j0 = int64_t{blockIdx.x} * kKeys;
  if (j0 >= sk) return;  // the whole block
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, gid = lane / 4, tid = lane % 4;
  const int keys = int(sk - j0 < kKeys ? sk - j0 : kKeys);
  const int64_t token = o.kv[b] + j0;
  attention::load_rows<kThreads>(t.k, static_cast<const E*>(in.k) + (token * kv_heads + g) * D, int64_t{kv_heads} * D, kKeys, kQc, keys);
  attention::load_rows<kThreads>(t.v, static_cast<const E*>(in.v) + (token * kv_heads + g) * DV, int64_t{kv_heads} * DV, kKeys, kVc,
                                 keys);
  int64_t lo, hi;
  attention::queries_seeing(m, sq, sk, j0, j0 + keys, lo, hi);
  const int64_t per_head = (hi - lo + kRows - 1) / kRows, tiles = per_head * m.group;
  const auto head_of = [&](int64_t i) { return g * m.group + int(i / per_head); };
  const auto first_query = [&](int64_t i) { return lo + i % per_head * kRows; };
  if (tiles > 0) load_queries<E, D, DV>(t.q(0), t.d_out(0), t.lse2(0), t.dd(0), in, m, o, b, head_of(0), first_query(0), kRows);
  kl::ptx::cp_async_commit();

  const float scale2 = m.scale * kLog2e;
  float acc_k[kQc][4] = {}, acc_v[kVc][4] = {};
  for (int64_t i = 0; i < tiles; ++i) {
    const int st = int(i % 2), h = head_of(i);
    const int64_t i0 = first_query(i);
    kl::ptx::cp_async_wait<0>();
    __syncthreads();  // tile i is in; the other stage and dS^T are free
    if (i + 1 < tiles)
      load_queries<E, D, DV>(t.q(1 - st), t.d_out(1 - st), t.lse2(1 - st), t.dd(1 - st), in, m, o, b, head_of(i + 1),
                             first_query(i + 1), kRows);
    kl::ptx::cp_async_commit();

    float s[kSn][4] = {}, dp[kSn][4] = {};  // S^T and dP^T: the warp's 16 keys x 32 queries
    rows_times_rows<E>(s, t.k, 16 * warp, t.q(st), kQc, D);
    rows_times_rows<E>(dp, t.v, 16 * warp, t.d_out(st), kVc, DV);
    const int64_t i1 = i0 + kRows < sq ? i0 + kRows : sq;
    const bool cut = mask_cuts(m, sq, sk, i0, i1, j0, kKeys);
    KL_UNROLL
    for (int j = 0; j < kSn; ++j)
      KL_UNROLL
      for (int e = 0; e < 4; ++e) {
        const int col = 8 * j + 2 * tid + e % 2;  // the query, in the tile
        float x = s[j][e] * scale2 - t.lse2(st)[col];
        if (cut) mask(x, m, sq, sk, i0 + col, j0 + 16 * warp + gid + 8 * (e / 2));
        s[j][e] = exp2f(x);                            // P^T
        dp[j][e] = s[j][e] * (dp[j][e] - t.dd(st)[col]);  // dS^T
      }
    uint32_t p[kSn / 2][4], ds[kSn / 2][4];
    KL_UNROLL
    for (int kk = 0; kk < kSn / 2; ++kk) {
      a_from_accumulators<E>(p[kk], s[2 * kk], s[2 * kk + 1]);
      a_from_accumulators<E>(ds[kk], dp[2 * kk], dp[2 * kk + 1]);
    }
    regs_times_tile<E, kRows>(acc_v, p, t.d_out(st), kVc);  // dV += P^T dO
    regs_times_tile<E, kRows>(acc_k, ds, t.q(st), kQc);     // dK += dS^T Q
    if constexpr (kAtomicDq) {
      KL_UNROLL
      for (int j = 0; j < kSn; ++j)
        KL_UNROLL
        for (int hf = 0; hf < 2; ++hf) {
          const int r = 16 * warp + gid + 8 * hf;
          memcpy(reinterpret_cast<char*>(&t.ds[r * (kRows / 8) + swz4(r, j)]) + 4 * tid, &ds[j / 2][2 * (j % 2) + hf],
                 sizeof(uint32_t));
        }
      __syncthreads();  // dS^T complete
      // dQ (32 x d) += dS K: this warp's d/4 columns, 16 at a time (fewer live registers beside dK
      // and dV), both 16-query halves, the 64 keys in k16 steps.
      constexpr int kN = D / 32;
      KL_UNROLL
      for (int n = warp * kN; n < (warp + 1) * kN; n += 2) {
        float dq[2][2][4] = {};
        KL_UNROLL
        for (int kk = 0; kk < kKeys / 16; ++kk) {
          uint32_t x[4];  // K's B fragments for columns n and n + 1
          const int br = 16 * kk + lane % 8 + 8 * ((lane / 8) % 2), bc = n + lane / 16;
          kl::ptx::ldmatrix_x4_trans(x, &t.k[br * kQc + swz(br, bc)]);
          const uint32_t b0[2] = {x[0], x[1]}, b1[2] = {x[2], x[3]};
          KL_UNROLL
          for (int mt = 0; mt < 2; ++mt) {
            uint32_t a[4];  // (queries 0-7, keys 0-7), (8-15, 0-7), (0-7, 8-15), (8-15, 8-15) of dS
            const int kr = 16 * kk + 8 * (lane / 16) + lane % 8, qc = 2 * mt + (lane / 8) % 2;
            kl::ptx::ldmatrix_x4_trans(a, &t.ds[kr * (kRows / 8) + swz4(kr, qc)]);
            mma<E>(dq[mt][0], a, b0);
            mma<E>(dq[mt][1], a, b1);
          }
        }
        KL_UNROLL
        for (int mt = 0; mt < 2; ++mt)
          KL_UNROLL
          for (int e = 0; e < 4; ++e) {
            const int64_t query = i0 + 16 * mt + gid + 8 * (e / 2);
            if (query >= sq) continue;
            float* at = dq_acc + ((o.q[b] + query) * m.heads + h) * D + 8 * n + 2 * tid + e % 2;
            atomicAdd(at, m.scale * dq[mt][0][e]);
            atomicAdd(at + 8, m.scale * dq[mt][1][e]);
          }
      }
    }
  }
  // dK and dV through shared memory (over K and V, once every warp is done with them), then
  // stored in 16-byte chunks: each warp its own 16 keys.
  kl::ptx::cp_async_wait<0>();  // with no query tile, K and V may still be landing
  __syncthreads();
  const float scale_k[2] = {m.scale, m.scale}, one[2] = {1.0f, 1.0f};
  Chunk *k_rows = t.k + 16 * warp * kQc, *v_rows = t.v + 16 * warp * kVc;
  attention::stage_fragments<E>(k_rows, kQc, acc_k, scale_k);
  attention::stage_fragments<E>(v_rows, kVc, acc_v, one);
  __syncwarp();
  const int warp_keys = keys - 16 * warp < 16 ? keys - 16 * warp : 16;
  const int64_t first_key = token + 16 * warp;
  attention::store_rows(k_rows, kQc, kQc, dk + (first_key * kv_heads + g) * D, int64_t{kv_heads} * D, warp_keys);
  attention::store_rows(v_rows, kVc, kVc, dv + (first_key * kv_heads + g) * DV, int64_t{kv_heads} * DV, warp_keys);
}

template <int D, int DV> struct QTiles {
  static constexpr int kKeyTile = 64;
  static constexpr int kQc = D / 8, kVc = DV / 8;
  static constexpr int kStage = kKeyTile * (kQc + kVc);  // chunks of a (K, V) stage
  static constexpr size_t kSmem = (size_t(kQRows) * (kQc + kVc) + 2 * kStage) * sizeof(Chunk) + 2 * kQRows * sizeof(float);
};

// --deterministic: dQ of 64 queries of one head, the key tiles in order, summed in registers.
template <class E, int D, int DV>
__global__ void __launch_bounds__(kThreads) grad_q(Inputs in, E* __restrict__ dq, Shape m, Offsets o) {
  using T = QTiles<D, DV>;
  constexpr int kQc = T::kQc, kVc = T::kVc, kKeyTile = T::kKeyTile, kSn = kKeyTile / 8;
  KL_DYNAMIC_SHARED(Chunk, smem);
  Chunk *q_tile = smem, *do_tile = q_tile + kQRows * kQc, *stages = do_tile + kQRows * kVc;
  float* lse2 = reinterpret_cast<float*>(stages + 2 * T::kStage);
  float* dd = lse2 + kQRows;
  const auto k_tile = [&](int st) { return stages + st * T::kStage; };
  const auto v_tile = [&](int st) { return stages + st * T::kStage + kKeyTile * kQc; };
  const int b = blockIdx.y / m.heads, h = blockIdx.y % m.heads, g = h / m.group, kv_heads = m.heads / m.group;
  const int64_t sq = o.q[b + 1] - o.q[b], sk = o.kv[b + 1] - o.kv[b], i0 = int64_t{blockIdx.x} * kQRows;
  if (i0 >= sq) return;  // the whole block
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, gid = lane / 4, tid = lane % 4;
  const int64_t i1 = i0 + kQRows < sq ? i0 + kQRows : sq;
  int64_t lo, hi, unused;
  visible(m, sq, sk, i0, lo, unused);
  visible(m, sq, sk, i1 - 1, unused, hi);
  load_queries<E, D, DV>(q_tile, do_tile, lse2, dd, in, m, o, b, h, i0, kQRows);
  const E* k_head = static_cast<const E*>(in.k) + (o.kv[b] * kv_heads + g) * D;
  const E* v_head = static_cast<const E*>(in.v) + (o.kv[b] * kv_heads + g) * DV;
  const int64_t k_stride = int64_t{kv_heads} * D, v_stride = int64_t{kv_heads} * DV;
  const int64_t t0 = lo / kKeyTile, t1 = (hi + kKeyTile - 1) / kKeyTile;
  const auto load_keys = [&](int st, int64_t j) {
    const int keys = int(sk - j < kKeyTile ? sk - j : kKeyTile);
    attention::load_rows<kThreads>(k_tile(st), k_head + j * k_stride, k_stride, kKeyTile, kQc, keys);
    attention::load_rows<kThreads>(v_tile(st), v_head + j * v_stride, v_stride, kKeyTile, kVc, keys);
  };
  if (t0 < t1) load_keys(0, t0 * kKeyTile);
  kl::ptx::cp_async_commit();

  const float scale2 = m.scale * kLog2e;
  float acc[kQc][4] = {};
  for (int64_t tile = t0; tile < t1; ++tile) {
    const int st = int((tile - t0) % 2);
    kl::ptx::cp_async_wait<0>();
    __syncthreads();  // tile is in (and Q, dO, LSE, D the first time); the other stage is free
    if (tile + 1 < t1) load_keys(1 - st, (tile + 1) * kKeyTile);
    kl::ptx::cp_async_commit();
    float s[kSn][4] = {}, dp[kSn][4] = {};  // S and dP: the warp's 16 queries x 64 keys
    rows_times_rows<E>(s, q_tile, 16 * warp, k_tile(st), kQc, D);
    rows_times_rows<E>(dp, do_tile, 16 * warp, v_tile(st), kVc, DV);
    const int64_t j0 = tile * kKeyTile;
    const bool cut = mask_cuts(m, sq, sk, i0, i1, j0, kKeyTile);
    KL_UNROLL
    for (int j = 0; j < kSn; ++j)
      KL_UNROLL
      for (int e = 0; e < 4; ++e) {
        const int row = 16 * warp + gid + 8 * (e / 2);
        float x = s[j][e] * scale2 - lse2[row];
        if (cut) mask(x, m, sq, sk, i0 + row, j0 + 8 * j + 2 * tid + e % 2);
        dp[j][e] = exp2f(x) * (dp[j][e] - dd[row]);  // dS
      }
    uint32_t ds[kSn / 2][4];
    KL_UNROLL
    for (int kk = 0; kk < kSn / 2; ++kk) a_from_accumulators<E>(ds[kk], dp[2 * kk], dp[2 * kk + 1]);
    regs_times_tile<E, kKeyTile>(acc, ds, k_tile(st), kQc);  // dQ += dS K
  }
  kl::ptx::cp_async_wait<0>();  // with no key tile, Q may still be landing
  __syncthreads();              // every warp is past its last read of Q: stage dQ over the warp's Q rows
  Chunk* rows = q_tile + 16 * warp * kQc;
  const float scale[2] = {m.scale, m.scale};
  attention::stage_fragments<E>(rows, kQc, acc, scale);
  __syncwarp();
  const int warp_rows = int(i1 - i0) - 16 * warp < 16 ? int(i1 - i0) - 16 * warp : 16;
  attention::store_rows(rows, kQc, kQc, dq + ((o.q[b] + i0 + 16 * warp) * m.heads + h) * D, int64_t{m.heads} * D, warp_rows);
}

template <class E, int D, int DV> void run(const AttentionParams& p, const Args& a) {
  const Offsets o = attention::upload_offsets(p, a);
  float *d, *dq_acc;
  attention::start_backward(p, a, static_cast<const E*>(a.in[3].data()), static_cast<const E*>(a.in[5].data()), d, dq_acc);
  const Inputs in{a.in[0].data(), a.in[1].data(), a.in[2].data(), a.in[5].data(), static_cast<const float*>(a.in[4].data()), d};
  E *dq = static_cast<E*>(a.out[0].data()), *dk = static_cast<E*>(a.out[1].data()), *dv = static_cast<E*>(a.out[2].data());
  const Shape m = attention::shape_of(p);
  constexpr size_t kv_smem = KvTiles<D, DV>::kSmem, q_smem = QTiles<D, DV>::kSmem;
  const dim3 kv_grid(unsigned((attention::longest_kv(p) + kKeys - 1) / kKeys), unsigned(p.batch * p.kv_heads));
  if (p.deterministic) {
    allow_dynamic_smem<grad_kv<E, D, DV, false>>(int(kv_smem));
    allow_dynamic_smem<grad_q<E, D, DV>>(int(q_smem));
    KL_LAUNCH((grad_kv<E, D, DV, false>), kv_grid, kThreads, kv_smem, a.stream, in, dk, dv, static_cast<float*>(nullptr), m, o);
    const dim3 q_grid(unsigned((attention::longest_q(p) + kQRows - 1) / kQRows), unsigned(p.batch * p.heads));
    KL_LAUNCH((grad_q<E, D, DV>), q_grid, kThreads, q_smem, a.stream, in, dq, m, o);
    return;
  }
  allow_dynamic_smem<grad_kv<E, D, DV, true>>(int(kv_smem));
  KL_LAUNCH((grad_kv<E, D, DV, true>), kv_grid, kThreads, kv_smem, a.stream, in, dk, dv, dq_acc, m, o);
  attention::finish_atomic_dq<E>(p, a, dq_acc);
}

template <class E> void run_dims(const AttentionParams& p, const Args& a) {
  if (p.head_dim == 64) run<E, 64, 64>(p, a);
  else run<E, 128, 128>(p, a);
}

void launch(const AttentionParams& p, const Args& a) {
  if (p.dtype == DType::f16) run_dims<__half>(p, a);
  else run_dims<__nv_bfloat16>(p, a);
}

// The kernels of each compiled (d, dv) in fp16 and bf16: grad_kv with atomic dQ (0), grad_kv
// without (1), grad_q (2).
template <class E> std::vector<KernelRef> kernels_of(int which) {
  if (which == 0) return {KL_KERNEL(grad_kv<E, 64, 64, true>), KL_KERNEL(grad_kv<E, 128, 128, true>)};
  if (which == 1) return {KL_KERNEL(grad_kv<E, 64, 64, false>), KL_KERNEL(grad_kv<E, 128, 128, false>)};
  return {KL_KERNEL(grad_q<E, 64, 64>), KL_KERNEL(grad_q<E, 128, 128>)};
}
std::vector<KernelRef> kernels(int which) {
  std::vector<KernelRef> k = kernels_of<__half>(which);
  for (const KernelRef& r : kernels_of<__nv_bfloat16>(which)) k.push_back(r);
  return k;
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<AttentionParams> r;
  r.op = "attention_bwd";
  r.name = "cuda_flash2_mma";
  r.note = "FlashAttention-2's backward on tensor cores: a block per 64 keys (16 per warp) computes S^T, dP^T, P^T and dS^T "
           "with keys in rows so that P^T and dS^T are the A fragments of dV += P^T dO and dK += dS^T Q (mma.sync m16n8k16, "
           "ldmatrix), Q/dO tiles double-buffered by cp.async; dS^T once through shared memory for dQ by fp32 atomics; "
           "--deterministic: dQ by its own tensor-core pass over the keys";
  r.supports = [](const AttentionParams& p) -> Reason {
    if (p.dtype != DType::f16 && p.dtype != DType::bf16) return "a tensor-core rung: fp16 or bf16";
    if (p.head_dim != p.head_dim_v || (p.head_dim != 64 && p.head_dim != 128))
      return "head dims 64 and 128 (d = dv): a warp holds 16 keys' dK and dV in registers, 256 of them at d 256 (160 at 192/128)";
    return attention::heads_must_fit_grid(p);
  };
  r.workspace_bytes = attention::bwd_workspace_bytes;
  const std::vector<std::string> ptx = {"mma.sync.aligned.m16n8k16.row.col.f32", "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
                                        "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16", "cp.async.cg.shared.global", "ex2.approx"};
  const std::vector<std::string> sass = {"HMMA.16816.F32", "LDSM.16.M88.4", "LDSM.16.MT88.4", "LDGSTS.E.BYPASS.128", "MUFU.EX2"};
  std::vector<std::string> ptx_atomic = ptx, sass_atomic = sass;
  ptx_atomic.push_back("atom.global.add.f32"), sass_atomic.push_back("REDG.E.ADD.F32");
  r.configs = {{.name = "64k_32q_4warps",
                .threads = kThreads,
                .dynamic_smem = int64_t(KvTiles<128, 128>::kSmem),  // grad_kv at d = dv = 128: 68.5 KiB
                .kernels = {{{KL_KERNEL(attention::row_dot<__half>), KL_KERNEL(attention::row_dot<__nv_bfloat16>)}, {"shfl.sync.bfly"}, {"SHFL.BFLY"}},
                            {kernels(0), ptx_atomic, sass_atomic},
                            {kernels(1), ptx, sass},
                            {kernels(2), ptx, sass},
                            {{KL_KERNEL(attention::dq_convert<__half>), KL_KERNEL(attention::dq_convert<__nv_bfloat16>)}, {}, {}}},
                .run = launch}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
