// gemm_fp8 v02: Hopper's data path on 1-byte operands (gemm v11's, for fp8). TMA copies each
// 128 x 128 tile of A and of W into 128-byte-swizzled shared memory (128 k of e4m3 is one swizzle
// row and one scale block), a 4-stage ring of full/empty mbarriers, and two warpgroups run
// wgmma m64n128k32 e4m3 on descriptors, 4 per stage: Hopper's fp8 tensor rate, where v01's
// mma.sync e4m3 is lowered to f16 HMMA on sm_90a, and no thread computes an operand address.
// Each stage's sums land in a fresh partial, promoted into the fp32 total once per 128 k (DeepSeek-V3's
// interval), times sa * sw with block scaling; a tensor scale is applied at the end. Without the
// promotion the tensor-scaled sums missed fp16's tolerance at k = 10944 on an H200 (4.1e-3 against
// 2.5e-3): the fp8 wgmma does not keep fp32's bits over a long k (the simulator's twin does).
#include "ops/gemm/cuda/hopper_ring8.cuh"
#include "ops/gemm_fp8/cuda/dispatch.cuh"
#include "ops/gemm_fp8/gemm_fp8.h"
#include "ops/gemm_w8a8/cuda/k32_tile.cuh"  // store_pair
#include "ops/gpu_rowwise.h"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using namespace ring8;
static_assert(kBK == Fp8Params::kBlock, "a stage is one 128-k scale block: the promotion runs once per stage");
static_assert(kBN == Fp8Params::kBlock, "a block tile's columns share one W scale block");

#if KL_PTX_SM90A
// Consumer c's 64 rows of stage st times its 128 W rows into acc (acc = product when `fresh`): 4 k32
// steps, the descriptors' start moving 32 bytes along the swizzled rows (8-row atoms 1024 bytes apart).
__device__ __forceinline__ void multiply_stage(Smem& s, int st, int c, float (&acc)[64], bool fresh) {
  kl::ptx::wgmma_fence();
  KL_UNROLL
  for (int kk = 0; kk < kBK / 32; ++kk) {
    const uint64_t da = kl::ptx::smem_descriptor(&s.a[st][c * 64 * kBK + kk * 32], 16, 1024, kl::ptx::Swizzle::b128);
    const uint64_t dw = kl::ptx::smem_descriptor(&s.w[st][kk * 32], 16, 1024, kl::ptx::Swizzle::b128);
    kl::ptx::wgmma_m64n128k32_f32_e4m3_ss(acc, da, dw, fresh && kk == 0 ? 0 : 1);
  }
  kl::ptx::wgmma_commit();
  kl::ptx::wgmma_wait<0>();
  kl::ptx::fence_operands(acc);
}
#endif

// D (64 x 128 of a warpgroup at row0, col0) from its accumulators times `scale`: thread (warp w,
// lane 4g+t) holds acc[i] at row 16w + g + 8((i%4)/2), column 8(i/4) + 2t + i%2.
template <class T>
__device__ __forceinline__ void store_d(T* __restrict__ d, const Operands& o, int row0, int col0, const float (&acc)[64], float scale) {
  const int tid = threadIdx.x % 128, w = tid / 32, g = tid % 32 / 4, t = tid % 4;
  KL_UNROLL
  for (int i = 0; i < 64; i += 2) {
    const int r = row0 + 16 * w + g + 8 * ((i % 4) / 2), col = col0 + 8 * (i / 4) + 2 * t;
    k32_tile::store_pair(d, o.m, o.n, r, col, rowwise::from_f32<T>(acc[i] * scale), rowwise::from_f32<T>(acc[i + 1] * scale));
  }
}

template <class T, bool kBlock>
__global__ void __launch_bounds__(kThreads, 1)
    gemm_fp8_tma_wgmma(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_w, Operands o,
                       T* __restrict__ d) {
#if KL_PTX_SM90A
  KL_DYNAMIC_SHARED(unsigned char, raw);
  Smem& s = *gemm_hopper::aligned_smem<Smem>(raw);
  const int c = threadIdx.x / 128, tid = threadIdx.x % 128;
  const Ring ring{s, &map_a, &map_w, static_cast<int>(blockIdx.y) * kBM, static_cast<int>(blockIdx.x) * kBN};
  const int tiles = (o.k + kBK - 1) / kBK;  // k slices; with block scaling, also the scale blocks along k (k % 128 == 0)
  if (threadIdx.x == 0) {
    ring.init();
    for (int kt = 0; kt < kStages && kt < tiles; ++kt) ring.producer_issue(kt);
  }
  __syncthreads();
  // The thread's two rows of D (g and g + 8 of its warp's 16), for their A scales.
  const int row = ring.m0 + 64 * c + 16 * (tid / 32) + tid % 32 / 4;
  float total[64] = {};
  float part[64];
  for (int kt = 0; kt < tiles; ++kt) {
    ring.consumer_wait(kt);
    if constexpr (kBlock) {
      const float ws = o.sw[static_cast<int64_t>(blockIdx.x) * tiles + kt];
      const float s0 = row < o.m ? o.sa[static_cast<int64_t>(row) * tiles + kt] * ws : 0.0f;
      const float s1 = row + 8 < o.m ? o.sa[static_cast<int64_t>(row + 8) * tiles + kt] * ws : 0.0f;
      multiply_stage(s, kt % kStages, c, part, true);
      ring.consumer_release(kt, tid);
      KL_UNROLL
      for (int i = 0; i < 64; ++i) total[i] += part[i] * (i % 4 < 2 ? s0 : s1);  // the promotion
    } else {  // promoted as well: the wgmma's fp8 sums keep fewer bits than fp32 over a long k
      multiply_stage(s, kt % kStages, c, part, true);
      ring.consumer_release(kt, tid);
      KL_UNROLL
      for (int i = 0; i < 64; ++i) total[i] += part[i];
    }
    if (threadIdx.x == 0 && kt + kStages < tiles) {  // refill the stage once both warpgroups are done with it
      ring.producer_wait_empty(kt);
      ring.producer_issue(kt + kStages);
    }
  }
  store_d(d, o, ring.m0 + 64 * c, ring.n0, total, kBlock ? 1.0f : o.sa[0] * o.sw[0]);
#endif
}

template <class T, bool kBlock> void launch_as(const Fp8Params& p, const Args& x) {
  allow_dynamic_smem<gemm_fp8_tma_wgmma<T, kBlock>>(kSmem);
  const Operands o{static_cast<const float*>(x.in[p.kSa].data()), static_cast<const float*>(x.in[p.kSw].data()),
                   static_cast<int>(p.m), static_cast<int>(p.n), static_cast<int>(p.k)};
  const CUtensorMap map_a = tensor_map(x.in[p.kA].data(), o.m, o.k, kBM);
  const CUtensorMap map_w = tensor_map(x.in[p.kW].data(), o.n, o.k, kBN);
  const dim3 grid((p.n + kBN - 1) / kBN, (p.m + kBM - 1) / kBM);
  KL_LAUNCH((gemm_fp8_tma_wgmma<T, kBlock>), grid, kThreads, kSmem, x.stream, map_a, map_w, o, static_cast<T*>(x.out[0].data()));
}
void launch(const Fp8Params& p, const Args& x) {
  fp8::with_type_and_scaling(p, [&](auto t, auto block) { launch_as<decltype(t), decltype(block)::value>(p, x); });
}

Reason supports(const Fp8Params& p) {
  if (p.m > INT32_MAX / 2 || p.n > INT32_MAX / 2 || p.k > INT32_MAX / 2) return "m, n and k must fit in 31 bits";
  if (p.m > int64_t(65535) * kBM) return "m beyond 65535 block rows of 128 (gridDim.y's limit)";
  if (p.k % 16 != 0) return "k a multiple of 16: TMA needs the rows of A and W 16-byte aligned";
  if (const int cc = gemm_hopper::device_cc(); cc != 0 && cc != 90)
    return "a Hopper rung: wgmma with e4m3 and TMA need sm_90a, and this GPU is sm_" + std::to_string(cc);
  return {};
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<Fp8Params> r{
      .op = "gemm_fp8",
      .name = "cuda_tma_wgmma_fp8",
      .note = "Hopper: TMA loads 128x128 e4m3 tiles (128 k: one swizzle row, one scale block) into 128-byte-swizzled "
              "shared memory, a 4-stage full/empty mbarrier ring, two warpgroups run wgmma m64n128k32 e4m3 on "
              "descriptors; each stage's partial is promoted into an fp32 total (times the block scales; a tensor "
              "scale is applied in the epilogue)",
      .supports = supports,
      .configs = {{.name = "128x128x128_2wg_4stages",
                   .threads = kThreads,
                   .dynamic_smem = kSmem,
                   .kernels = {{{KL_KERNEL(gemm_fp8_tma_wgmma<__nv_bfloat16, true>), KL_KERNEL(gemm_fp8_tma_wgmma<__half, true>),
                                 KL_KERNEL(gemm_fp8_tma_wgmma<__nv_bfloat16, false>), KL_KERNEL(gemm_fp8_tma_wgmma<__half, false>)},
                                {"wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3", "cp.async.bulk.tensor.2d.shared::cluster.global",
                                 "mbarrier.try_wait.parity"},
                                {"QGMMA.64x128x32.F32.E4M3.E4M3", "UTMALDG.2D", "SYNCS.PHASECHK.TRANS64.TRYWAIT"}}},
                   .run = launch,
                   .tiling = Tiling{.block_m = kBM, .block_n = kBN, .block_k = kBK, .warp_m = 64, .warp_n = kBN,  // a warpgroup's tile
                                    .mma = "wgmma.m64n128k32", .mma_m = 64, .mma_n = 128, .mma_k = 32, .stages = kStages}}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
