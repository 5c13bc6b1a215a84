// gemm_w8a8 v02: Hopper's int8 data path (gemm_fp8 v02's, without the promotion). TMA copies each
// 128 x 128 tile of A and of W into 128-byte-swizzled shared memory behind a 4-stage full/empty
// mbarrier ring, and two warpgroups run wgmma m64n128k32 s8 on descriptors: where v01 spends an
// ldmatrix per fragment and an IMMA per 16x8x32, the tensor core reads the tiles itself, 64x128x32 an
// instruction. The int32 sums are exact, so one accumulator set runs over all of k, one stage's
// wgmmas stay in flight while the next are issued, and the scales are applied once, in the epilogue.
#include "ops/gemm/cuda/hopper_ring8.cuh"
#include "ops/gemm_w8a8/cuda/k32_tile.cuh"  // store_pair
#include "ops/gemm_w8a8/gemm_w8a8.h"
#include "ops/gpu_rowwise.h"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using namespace ring8;

#if KL_PTX_SM90A
// Issues consumer c's 64 rows of stage st times its 128 W rows onto acc (acc = the product when
// `first`) as one commit group: 4 k32 steps, the descriptors' start moving 32 bytes along the
// swizzled rows (8-row atoms 1024 bytes apart). The caller waits for the group.
__device__ __forceinline__ void issue_stage(Smem& s, int st, int c, int (&acc)[64], bool first) {
  kl::ptx::wgmma_fence();
  KL_UNROLL
  for (int kk = 0; kk < kBK / 32; ++kk) {
    const uint64_t da = kl::ptx::smem_descriptor(&s.a[st][c * 64 * kBK + kk * 32], 16, 1024, kl::ptx::Swizzle::b128);
    const uint64_t dw = kl::ptx::smem_descriptor(&s.w[st][kk * 32], 16, 1024, kl::ptx::Swizzle::b128);
    kl::ptx::wgmma_m64n128k32_s32_s8_ss(acc, da, dw, first && kk == 0 ? 0 : 1);
  }
  kl::ptx::wgmma_commit();
}
#endif

// D (64 x 128 of a warpgroup at row0, col0) = float(acc) * sa[row] * sw[col], rounded once: thread
// (warp w, lane 4g+t) holds acc[i] at row 16w + g + 8((i%4)/2), column 8(i/4) + 2t + i%2.
template <class T>
__device__ __forceinline__ void store_d(T* __restrict__ d, const Operands& o, int row0, int col0, const int (&acc)[64]) {
  const int tid = threadIdx.x % 128, w = tid / 32, g = tid % 32 / 4, t = tid % 4;
  const int r0 = row0 + 16 * w + g;
  const float s0 = r0 < o.m ? o.sa[r0] : 0.0f, s1 = r0 + 8 < o.m ? o.sa[r0 + 8] : 0.0f;
  KL_UNROLL
  for (int i = 0; i < 64; i += 2) {
    const int r = r0 + 8 * ((i % 4) / 2), col = col0 + 8 * (i / 4) + 2 * t;
    const float s = i % 4 < 2 ? s0 : s1, w0 = col < o.n ? o.sw[col] : 0.0f, w1 = col + 1 < o.n ? o.sw[col + 1] : 0.0f;
    k32_tile::store_pair(d, o.m, o.n, r, col, rowwise::from_f32<T>(float(acc[i]) * s * w0),
                         rowwise::from_f32<T>(float(acc[i + 1]) * s * w1));
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads, 1)
    gemm_w8a8_tma_wgmma(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_w, Operands o,
                        T* __restrict__ d) {
#if KL_PTX_SM90A
  KL_DYNAMIC_SHARED(unsigned char, raw);
  Smem& s = *gemm_hopper::aligned_smem<Smem>(raw);
  const int c = threadIdx.x / 128, tid = threadIdx.x % 128;
  const Ring ring{s, &map_a, &map_w, static_cast<int>(blockIdx.y) * kBM, static_cast<int>(blockIdx.x) * kBN};
  const int tiles = (o.k + kBK - 1) / kBK;  // k slices; TMA fills the columns past k with zeros
  if (threadIdx.x == 0) {
    ring.init();
    for (int kt = 0; kt < kStages && kt < tiles; ++kt) ring.producer_issue(kt);
  }
  __syncthreads();
  int acc[64];
  for (int kt = 0; kt < tiles; ++kt) {
    ring.consumer_wait(kt);
    issue_stage(s, kt % kStages, c, acc, kt == 0);
    kl::ptx::wgmma_wait<1>();  // slice kt - 1's wgmmas are done: its stage can be refilled
    if (kt == 0) continue;
    ring.consumer_release(kt - 1, tid);
    if (threadIdx.x == 0 && kt - 1 + kStages < tiles) {
      ring.producer_wait_empty(kt - 1);
      ring.producer_issue(kt - 1 + kStages);
    }
  }
  kl::ptx::wgmma_wait<0>();
  kl::ptx::fence_operands(acc);
  store_d(d, o, ring.m0 + 64 * c, ring.n0, acc);
#endif
}

template <class T> void launch_as(const W8A8Params& p, const Args& x) {
  allow_dynamic_smem<gemm_w8a8_tma_wgmma<T>>(kSmem);
  const Operands o{static_cast<const float*>(x.in[p.kSa].data()), static_cast<const float*>(x.in[p.kSw].data()),
                   static_cast<int>(p.m), static_cast<int>(p.n), static_cast<int>(p.k)};
  const CUtensorMap map_a = tensor_map(x.in[p.kA].data(), o.m, o.k, kBM);
  const CUtensorMap map_w = tensor_map(x.in[p.kW].data(), o.n, o.k, kBN);
  const dim3 grid((p.n + kBN - 1) / kBN, (p.m + kBM - 1) / kBM);
  KL_LAUNCH(gemm_w8a8_tma_wgmma<T>, grid, kThreads, kSmem, x.stream, map_a, map_w, o, static_cast<T*>(x.out[0].data()));
}
void launch(const W8A8Params& p, const Args& x) {
  if (p.dtype == DType::f16) launch_as<__half>(p, x);
  else launch_as<__nv_bfloat16>(p, x);
}

static_assert(kBM == 128, "int8_rung_sizes counts block rows of 128");

Reason supports(const W8A8Params& p) {
  if (Reason why = int8_rung_sizes(p)) return why;
  if (p.k % 16 != 0) return "k a multiple of 16: TMA needs the rows of A and W 16-byte aligned";
  if (const int cc = gemm_hopper::device_cc(); cc != 0 && cc != 90)
    return "a Hopper rung: wgmma with s8 and TMA need sm_90a, and this GPU is sm_" + std::to_string(cc);
  return {};
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<W8A8Params> r{
      .op = "gemm_w8a8",
      .name = "cuda_tma_wgmma_s8",
      .note = "Hopper: TMA loads 128x128 int8 tiles into 128-byte-swizzled shared memory behind a 4-stage full/empty "
              "mbarrier ring, two warpgroups run wgmma m64n128k32 s8 on descriptors (no ldmatrix; a sixteenth of v01's "
              "tensor instructions), one exact int32 accumulator set over all of k with a stage's "
              "wgmmas in flight while the next are issued; the scales applied once, in the epilogue",
      .supports = supports,
      .configs = {{.name = "128x128x128_2wg_4stages",
                   .threads = kThreads,
                   .dynamic_smem = kSmem,
                   .kernels = {{{KL_KERNEL(gemm_w8a8_tma_wgmma<__half>), KL_KERNEL(gemm_w8a8_tma_wgmma<__nv_bfloat16>)},
                                {"wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8", "cp.async.bulk.tensor.2d.shared::cluster.global",
                                 "mbarrier.try_wait.parity"},
                                {"IGMMA.64x128x32.S8.S8", "UTMALDG.2D", "SYNCS.PHASECHK.TRANS64.TRYWAIT"}}},
                   .run = launch,
                   .tiling = Tiling{.block_m = kBM, .block_n = kBN, .block_k = kBK, .warp_m = 64, .warp_n = kBN,  // a warpgroup's tile
                                    .mma = "wgmma.m64n128k32", .mma_m = 64, .mma_n = 128, .mma_k = 32, .stages = kStages}}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
