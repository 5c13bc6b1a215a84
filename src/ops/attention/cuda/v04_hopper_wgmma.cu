// attention v04: FlashAttention-3's forward on Hopper (sm_90a). A block of three warpgroups takes
// 128 queries of one (sequence, head):
//   producer     one thread issues TMA loads: Q once, then K and V tiles of 64 keys into two
//                stages each (128-byte swizzle, 3-D tensor maps over [tokens, heads, d], so GQA
//                and variable length are coordinates), on full/empty mbarriers; it keeps 24
//                registers (setmaxnreg.dec) so that the consumers can take 240
//   consumers    two warpgroups of 64 queries each: S = Q K^T by wgmma (both operands from
//                shared memory, K-major), the online softmax on the accumulators, O += P V by
//                wgmma with P from registers and V MN-major (imm-trans-b: V's rows as TMA lands them)
// Within a consumer the softmax of tile j runs while the tensor cores still add P V of tile j-1
// (issued behind S of tile j, waited after the softmax: FA3's intra-warpgroup pipelining), so
// exp2 and the row reductions hide behind a GEMM. Key tiles the mask hides from all 128 queries are
// neither loaded nor multiplied; only tiles the mask cuts are masked element by element.
// Shared memory: Q 128 x d, 2 stages x (K + V) 64 x d: 48 KiB at d = 64, 96 KiB at 128, 192 KiB
// at 256 (where O's 128 accumulators a thread beside S's 32 and P's 16 need the 240 registers). O
// is staged over Q's rows at the end and leaves in 16-byte chunks.
#include "cuda/ptx.h"
#include "ops/attention/cuda/attention_common.cuh"
#include "ops/gemm/cuda/hopper_tile.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using namespace rowwise;
using attention::Offsets;
using attention::Shape;
using attention::visible;
using gemm_hopper::kAlignSlack;

constexpr int kRows = 128, kKeys = 64, kStages = 2, kThreads = 384;

// Tiles as TMA lands them: panels of 64 columns (128 bytes, one swizzle row) by the tile's rows.
template <int D> struct alignas(1024) Smem {
  static constexpr int kPanels = D / 64;
  uint16_t q[kPanels][kRows * 64];
  uint16_t k[kStages][kPanels][kKeys * 64];
  uint16_t v[kStages][kPanels][kKeys * 64];
  uint64_t q_full, k_full[kStages], v_full[kStages], k_empty[kStages], v_empty[kStages];
};
template <int D> constexpr int smem_bytes() { return int(sizeof(Smem<D>)) + kAlignSlack; }

struct Maps {
  CUtensorMap q, k, v;
};

#if KL_PTX_SM90A
constexpr float kLog2e = 1.4426950408889634f, kLn2 = 0.6931471805599453f;

// The keys [lo, hi) some query of the block sees, and [all_lo, all_hi) those all of them see.
__device__ __forceinline__ void key_range(const Shape& m, int64_t sq, int64_t sk, int64_t i0, int64_t& lo, int64_t& hi,
                                          int64_t& all_lo, int64_t& all_hi) {
  lo = sk, hi = 0, all_lo = 0, all_hi = sk;
  for (int64_t i = i0; i < i0 + kRows && i < sq; ++i) {
    int64_t first, last;
    visible(m, sq, sk, i, first, last);
    if (first < last) lo = first < lo ? first : lo, hi = last > hi ? last : hi;
    all_lo = first > all_lo ? first : all_lo, all_hi = last < all_hi ? last : all_hi;
  }
}

// S (64 queries x 64 keys) += Q_c K_st^T over d, in d/16 k16 steps: Q's rows of consumer c and the
// K tile, both K-major, 32 bytes further along the 128-byte rows per step, 8-row atoms 1024 apart.
template <class E, int D> __device__ __forceinline__ void issue_scores(Smem<D>& s, int c, int st, float (&acc)[32]) {
  kl::ptx::wgmma_fence();
  KL_UNROLL
  for (int kk = 0; kk < D / 16; ++kk) {
    const int panel = kk / 4, at = (kk % 4) * 16;
    const uint64_t dq = kl::ptx::smem_descriptor(&s.q[panel][c * 64 * 64 + at], 16, 1024, kl::ptx::Swizzle::b128);
    const uint64_t dk = kl::ptx::smem_descriptor(&s.k[st][panel][at], 16, 1024, kl::ptx::Swizzle::b128);
    if constexpr (std::is_same_v<E, __half>) kl::ptx::wgmma_m64n64k16_f32_f16_ss(acc, dq, dk, kk > 0);
    else kl::ptx::wgmma_m64n64k16_f32_bf16_ss(acc, dq, dk, kk > 0);
  }
  kl::ptx::wgmma_commit();
}

// O (64 x dv) += P V_st: P from registers, one k16 step per 16 keys; V MN-major: a key's row of 64
// columns is one swizzle row, 8 keys an atom (SBO 1024), the next 64 columns one panel on (LBO).
template <class E, int D> __device__ __forceinline__ void issue_values(Smem<D>& s, int st, const uint32_t (&p)[4][4], float (&o)[D / 2]) {
  kl::ptx::wgmma_fence();
  KL_UNROLL
  for (int kk = 0; kk < kKeys / 16; ++kk) {
    const uint64_t dv = kl::ptx::smem_descriptor(&s.v[st][0][kk * 16 * 64], kKeys * 128, 1024, kl::ptx::Swizzle::b128);
    if constexpr (D == 64) {
      if constexpr (std::is_same_v<E, __half>) kl::ptx::wgmma_m64n64k16_f32_f16_rs_mn(o, p[kk], dv, 1);
      else kl::ptx::wgmma_m64n64k16_f32_bf16_rs_mn(o, p[kk], dv, 1);
    } else {
      // n128 a time: at d 256 the second covers panels 2-3 into O's accumulators of columns 128-255
      // (the m64nN fragment puts column 8j's registers at 4j, so they are the array's second half).
      KL_UNROLL
      for (int half = 0; half < D / 128; ++half) {
        float(&oh)[64] = *reinterpret_cast<float(*)[64]>(&o[64 * half]);
        const uint64_t dvh =
            half == 0 ? dv : kl::ptx::smem_descriptor(&s.v[st][2 * half][kk * 16 * 64], kKeys * 128, 1024, kl::ptx::Swizzle::b128);
        if constexpr (std::is_same_v<E, __half>) kl::ptx::wgmma_m64n128k16_f32_f16_rs_mn(oh, p[kk], dvh, 1);
        else kl::ptx::wgmma_m64n128k16_f32_bf16_rs_mn(oh, p[kk], dvh, 1);
      }
    }
  }
  kl::ptx::wgmma_commit();
}
#endif

template <class E, int D>
__global__ void __launch_bounds__(kThreads, 1)
    flash3(const __grid_constant__ Maps maps, E* __restrict__ out, float* __restrict__ lse, Shape m, Offsets o) {
#if KL_PTX_SM90A
  KL_DYNAMIC_SHARED(unsigned char, raw);
  Smem<D>& s = *gemm_hopper::aligned_smem<Smem<D>>(raw);
  const int b = blockIdx.y / m.heads, h = blockIdx.y % m.heads, g = h / m.group;
  const int64_t sq = o.q[b + 1] - o.q[b], sk = o.kv[b + 1] - o.kv[b], i0 = int64_t{blockIdx.x} * kRows;
  if (i0 >= sq) return;  // the whole block
  int64_t lo, hi, all_lo, all_hi;
  key_range(m, sq, sk, i0, lo, hi, all_lo, all_hi);
  const int t0 = int(lo / kKeys), tiles = hi > lo ? int((hi + kKeys - 1) / kKeys) - t0 : 0;
  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
  if (threadIdx.x == 0) {
    kl::ptx::mbarrier_init(&s.q_full, 1);
    for (int i = 0; i < kStages; ++i) {
      kl::ptx::mbarrier_init(&s.k_full[i], 1), kl::ptx::mbarrier_init(&s.v_full[i], 1);
      kl::ptx::mbarrier_init(&s.k_empty[i], 2), kl::ptx::mbarrier_init(&s.v_empty[i], 2);
    }
    kl::ptx::fence_mbarrier_init();
  }
  __syncthreads();
  constexpr int kPanels = D / 64, kTileBytes = kKeys * D * 2;
  if (wg == 0) {  // producer
    kl::ptx::setmaxnreg_dec<24>();
    if (tid / 32 == 0 && kl::ptx::elect_sync()) {
      kl::ptx::mbarrier_arrive_expect_tx(&s.q_full, kRows * D * 2);
      for (int p = 0; p < kPanels; ++p) kl::ptx::tma_load_3d(s.q[p], &maps.q, 64 * p, h, int(o.q[b] + i0), &s.q_full);
      for (int it = 0; it < tiles; ++it) {
        const int st = it % kStages, phase = (it / kStages) & 1, key = int(o.kv[b] + int64_t{t0 + it} * kKeys);
        kl::ptx::mbarrier_wait_parity(&s.k_empty[st], phase ^ 1);  // both consumers are done with the stage
        kl::ptx::mbarrier_arrive_expect_tx(&s.k_full[st], kTileBytes);
        for (int p = 0; p < kPanels; ++p) kl::ptx::tma_load_3d(s.k[st][p], &maps.k, 64 * p, g, key, &s.k_full[st]);
        kl::ptx::mbarrier_wait_parity(&s.v_empty[st], phase ^ 1);
        kl::ptx::mbarrier_arrive_expect_tx(&s.v_full[st], kTileBytes);
        for (int p = 0; p < kPanels; ++p) kl::ptx::tma_load_3d(s.v[st][p], &maps.v, 64 * p, g, key, &s.v_full[st]);
      }
    }
    return;
  }
  kl::ptx::setmaxnreg_inc<240>();
  const int c = wg - 1, w = tid / 32, gid = tid % 32 / 4, t = tid % 4;
  // This thread's rows (of the block's 128): 64c + 16w + gid + 8hf (their keys are found on cut tiles only).
  const int64_t row0 = i0 + 64 * c + 16 * w + gid;
  const float scale2 = m.scale * kLog2e;
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0, 0}, acc[D / 2] = {}, rescale[2] = {1, 1};
  uint32_t p[4][4];  // P of the last tile as the A fragments of four k16 steps (S's accumulator layout is mma's A layout)
  kl::ptx::fence_operands(acc);  // O's zeros written here, not inside a wgmma's window (ptxas would serialize the wgmmas)
  kl::ptx::mbarrier_wait_parity(&s.q_full, 0);
  // Tile `it`: O rescaled to the last tile's max, S = Q K^T issued, O += P V of the last tile behind it; then,
  // once S is in, this tile's softmax runs while the tensor cores still add the last tile's P V.
  for (int it = 0; it < tiles; ++it) {
    const int st = it % kStages, phase = (it / kStages) & 1;
    float sc[32];
    KL_UNROLL
    for (int i = 0; i < D / 2; ++i) acc[i] *= rescale[(i % 4) / 2];  // to the last tile's max, before any wgmma is in flight
    kl::ptx::mbarrier_wait_parity(&s.k_full[st], phase);
    issue_scores<E, D>(s, c, st, sc);
    if (it > 0) {
      kl::ptx::mbarrier_wait_parity(&s.v_full[(it - 1) % kStages], ((it - 1) / kStages) & 1);
      issue_values<E, D>(s, (it - 1) % kStages, p, acc);
      kl::ptx::wgmma_wait<1>();  // S is in; P V of the last tile may still run
    } else {
      kl::ptx::wgmma_wait<0>();
    }
    kl::ptx::fence_operands(sc);
    if (tid == 0) kl::ptx::mbarrier_arrive(&s.k_empty[st]);
    const int64_t j0 = int64_t{t0 + it} * kKeys;
    const bool cut = j0 < all_lo || j0 + kKeys > all_hi;
    KL_UNROLL
    for (int hf = 0; hf < 2; ++hf) {
      int64_t first = 0, last = 0;  // the keys this row sees (none past the sequence)
      if (cut && row0 + 8 * hf < sq) visible(m, sq, sk, row0 + 8 * hf, first, last);
      float tile_max = -INFINITY;
      KL_UNROLL
      for (int i = 0; i < 32; ++i) {
        if ((i % 4) / 2 != hf) continue;
        const int64_t key = j0 + 8 * (i / 4) + 2 * t + i % 2;
        sc[i] = cut && (key < first || key >= last) ? -INFINITY : sc[i] * scale2;
        tile_max = fmaxf(tile_max, sc[i]);
      }
      tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
      tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
      const float new_max = fmaxf(row_max[hf], tile_max), base = new_max == -INFINITY ? 0.0f : new_max;
      rescale[hf] = exp2f(row_max[hf] - base);
      float sum = 0;
      KL_UNROLL
      for (int i = 0; i < 32; ++i)
        if ((i % 4) / 2 == hf) sc[i] = exp2f(sc[i] - base), sum += sc[i];
      row_sum[hf] = row_sum[hf] * rescale[hf] + sum;
      row_max[hf] = new_max;
    }
    kl::ptx::wgmma_wait<0>();  // the last tile's P V is in: O and the P registers are free
    kl::ptx::fence_operands(acc);
    if (tid == 0 && it > 0) kl::ptx::mbarrier_arrive(&s.v_empty[(it - 1) % kStages]);
    KL_UNROLL
    for (int kk = 0; kk < 4; ++kk)
      KL_UNROLL
      for (int r = 0; r < 4; ++r) p[kk][r] = attention::pack_pair<E>(sc[8 * kk + 2 * r], sc[8 * kk + 2 * r + 1]);
  }
  if (tiles > 0) {  // the last tile's P V
    KL_UNROLL
    for (int i = 0; i < D / 2; ++i) acc[i] *= rescale[(i % 4) / 2];
    kl::ptx::mbarrier_wait_parity(&s.v_full[(tiles - 1) % kStages], ((tiles - 1) / kStages) & 1);
    issue_values<E, D>(s, (tiles - 1) % kStages, p, acc);
    kl::ptx::wgmma_wait<0>();
    kl::ptx::fence_operands(acc);
  }
  // O through shared memory, so that it leaves in whole 16-byte chunks: each consumer writes its
  // fragments over its own 64 rows of the Q tile (every wgmma that read them has completed), in
  // the same 128-byte swizzle, then its 128 threads store the rows that belong to the sequence.
  const auto o_at = [&](int row, int col) {  // byte offset of O(row, col) of this consumer in its Q panel
    return (row * 128 + (col % 64) * 2) ^ ((row & 7) << 4);
  };
  KL_UNROLL
  for (int hf = 0; hf < 2; ++hf) {
    float sum = row_sum[hf];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    const int r = 16 * w + gid + 8 * hf;
    const float inv = sum > 0 ? 1.0f / sum : 0.0f;
    KL_UNROLL
    for (int n = 0; n < D / 8; ++n) {
      const uint32_t pair = attention::pack_pair<E>(acc[4 * n + 2 * hf] * inv, acc[4 * n + 2 * hf + 1] * inv);
      unsigned char* panel = reinterpret_cast<unsigned char*>(&s.q[n / 8][c * 64 * 64]);
      memcpy(panel + o_at(r, 8 * n + 2 * t), &pair, sizeof(pair));
    }
    const int64_t i = i0 + 64 * c + r;
    if (t == 0 && i < sq) lse[h * m.total_q + o.q[b] + i] = sum > 0 ? row_max[hf] * kLn2 + logf(sum) : INFINITY;
  }
  kl::ptx::bar_sync(1 + c, 128);  // this consumer's O rows are all in shared memory
  const bool whole_chunks = reinterpret_cast<uintptr_t>(out) % 16 == 0;  // else O is a view off 16-byte boundaries
  for (int e = tid; e < 64 * (D / 8); e += 128) {
    const int r = e / (D / 8), x = e % (D / 8);
    const int64_t i = i0 + 64 * c + r;
    if (i >= sq) break;
    const uint4 chunk = *reinterpret_cast<const uint4*>(reinterpret_cast<const unsigned char*>(&s.q[x / 8][c * 64 * 64]) + o_at(r, 8 * x));
    E* dst = out + ((o.q[b] + i) * m.heads + h) * D + 8 * x;
    if (whole_chunks) {
      *reinterpret_cast<uint4*>(dst) = chunk;
    } else {
      E v[8];
      memcpy(static_cast<void*>(v), &chunk, sizeof(chunk));
      KL_UNROLL
      for (int k = 0; k < 8; ++k) dst[k] = v[k];
    }
  }
#endif
}

// A [tokens, heads, d] tensor as TMA boxes of 64 columns x 1 head x `rows` tokens, 128-byte swizzle.
template <class E> CUtensorMap token_map(const void* base, int64_t tokens, int64_t heads, int64_t d, int rows) {
  CUtensorMap map;
  const CUtensorMapDataType type = std::is_same_v<E, __half> ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  const CUresult r = kl::ptx::encode_tensor_map_3d(&map, type, base, {uint64_t(d), uint64_t(heads), uint64_t(tokens)},
                                                   {uint64_t(d) * 2, uint64_t(heads * d) * 2}, {64, 1, uint32_t(rows)},
                                                   CU_TENSOR_MAP_SWIZZLE_128B);
  if (r != CUDA_SUCCESS) runtime_failure("cuTensorMapEncodeTiled failed (CUresult " + std::to_string(int(r)) + ")");
  return map;
}

template <class E, int D> void run(const AttentionParams& p, const Args& a) {
  const Offsets o = attention::upload_offsets(p, a);
  allow_dynamic_smem<flash3<E, D>>(smem_bytes<D>());
  const Maps maps{token_map<E>(a.in[0].data(), p.total_q(), p.heads, D, kRows), token_map<E>(a.in[1].data(), p.total_kv(), p.kv_heads, D, kKeys),
                  token_map<E>(a.in[2].data(), p.total_kv(), p.kv_heads, D, kKeys)};
  const dim3 grid(unsigned((attention::longest_q(p) + kRows - 1) / kRows), unsigned(p.batch * p.heads));
  KL_LAUNCH((flash3<E, D>), grid, kThreads, smem_bytes<D>(), a.stream, maps, static_cast<E*>(a.out[0].data()),
            static_cast<float*>(a.out[1].data()), attention::shape_of(p), o);
}

template <class E> void run_dims(const AttentionParams& p, const Args& a) {
  if (p.head_dim == 64) run<E, 64>(p, a);
  else if (p.head_dim == 128) run<E, 128>(p, a);
  else run<E, 256>(p, a);
}

void launch(const AttentionParams& p, const Args& a) {
  if (p.dtype == DType::f16) run_dims<__half>(p, a);
  else run_dims<__nv_bfloat16>(p, a);
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<AttentionParams> r;
  r.op = "attention";
  r.name = "cuda_hopper_wgmma";
  r.note = "FlashAttention-3 on sm_90a: a TMA producer warpgroup and two wgmma consumer warpgroups (128 queries per block, "
           "64-key tiles in two stages, d 64/128/256), P from registers into wgmma with V MN-major, the softmax of one tile "
           "overlapped with the last tile's PV";
  r.supports = [](const AttentionParams& p) -> Reason {
    if (p.dtype != DType::f16 && p.dtype != DType::bf16) return "a tensor-core rung: fp16 or bf16";
    if (p.head_dim != p.head_dim_v || (p.head_dim != 64 && p.head_dim != 128 && p.head_dim != 256))
      return "head dims 64, 128 and 256 (d = dv): each is compiled";
    if (Reason r = attention::heads_must_fit_grid(p)) return r;
    if (p.total_q() > INT32_MAX || p.total_kv() > INT32_MAX) return "TMA coordinates are 32-bit: at most 2^31 tokens";
    if (const int cc = gemm_hopper::device_cc(); cc != 0 && cc != 90)
      return "a Hopper rung: wgmma, TMA and setmaxnreg need sm_90a, and this GPU is sm_" + std::to_string(cc);
    return {};
  };
  r.workspace_bytes = [](const AttentionParams& p) { return attention::offset_bytes(p); };
  r.configs = {{.name = "128q_64k_1p2c_2stages",
                .threads = kThreads,
                .dynamic_smem = smem_bytes<128>(),
                .kernels = {{{KL_KERNEL(flash3<__half, 64>), KL_KERNEL(flash3<__half, 128>), KL_KERNEL(flash3<__half, 256>),
                              KL_KERNEL(flash3<__nv_bfloat16, 64>), KL_KERNEL(flash3<__nv_bfloat16, 128>),
                              KL_KERNEL(flash3<__nv_bfloat16, 256>)},
                             {"wgmma.mma_async.sync.aligned.m64n64k16.f32", "cp.async.bulk.tensor.3d.shared::cluster.global",
                              "setmaxnreg.inc.sync.aligned.u32", "elect.sync", "ex2.approx"},
                             {"HGMMA.64x64x16.F32", "UTMALDG.3D", "USETMAXREG", "MUFU.EX2"}}},
                .run = launch}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
