// gemm_fp8 v01: fp8 e4m3 tensor cores (mma.sync m16n8k32, sm_89+) on gemm_w8a8 v01's tile (the same
// bytes: cp.async into swizzled chunks, ldmatrix fragments). With block scaling the tensor cores'
// fp32 partial sums are promoted every 64 k (each stage: 2 mma per accumulator, half of a 128-k scale
// block): multiplied by sa[row, block] * sw[col block, block] and added into fp32 registers, DeepSeek-V3's
// promotion at twice its rate (a 4-register partial per accumulator instead of a second set of 64, which
// spilled on sm_90a). With a tensor scale there is one sum, scaled in the epilogue.
// On sm_90a ptxas lowers mma.sync e4m3 to f16 HMMA (Hopper's fp8 rate needs wgmma); sm_89 has it natively.
#include "ops/gemm_fp8/cuda/dispatch.cuh"
#include "ops/gemm_fp8/gemm_fp8.h"
#include "ops/gemm_w8a8/cuda/k32_tile.cuh"
#include "ops/gemm/cuda/hopper_tile.cuh"  // device_cc
#include "ops/gpu_rowwise.h"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using namespace k32_tile;
constexpr int kTilesPerBlock = Fp8Params::kBlock / kBK;  // 2 k tiles share a scale block
static_assert(Fp8Params::kBlock % kBK == 0 && kBN == Fp8Params::kBlock, "a block tile's columns share one W scale block");

struct E4m3Mma {
  __device__ __forceinline__ void operator()(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) const {
#if defined(KL_PTX_TWIN) || (defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890)
    kl::ptx::mma_m16n8k32_e4m3_f32(d, a, b, d);
#endif
  }
};

using Acc = float[kTilesM][kTilesN][4];

template <class T, bool kBlock>
__global__ void __launch_bounds__(kThreads, 1)
    gemm_fp8_mma(Operands o, const float* __restrict__ sa, const float* __restrict__ sw, T* __restrict__ d) {
  KL_DYNAMIC_SHARED(Stage, stages);
  const int warp = threadIdx.x / 32, row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  const int wrow = (warp / (kBN / kWN)) * kWM, wcol = (warp % (kBN / kWN)) * kWN;
  const int tiles = (o.k + kBK - 1) / kBK, k_blocks = o.k / Fp8Params::kBlock;
  Acc total = {};
  float row_scale[kTilesM][2];  // sa[row, block] * sw[col block, block] for the thread's 8 rows
  mainloop(stages, o, row0, col0, tiles, [&](const Stage& s, int kt) {
    if constexpr (!kBlock) {
      warp_tile_mma(s, wrow, wcol, total, E4m3Mma{});
    } else {
      if (kt % kTilesPerBlock == 0) {
        const int b = kt / kTilesPerBlock, g = threadIdx.x % 32 / 4;
        const float w_scale = sw[blockIdx.x * k_blocks + b];
        KL_UNROLL
        for (int i = 0; i < kTilesM; ++i)
          KL_UNROLL
          for (int h = 0; h < 2; ++h) {
            const int row = row0 + wrow + 16 * i + g + 8 * h;
            row_scale[i][h] = (row < o.m ? sa[static_cast<int64_t>(row) * k_blocks + b] : 0.0f) * w_scale;
          }
      }
      warp_tile_mma_promoted(s, wrow, wcol, total, E4m3Mma{}, [&](int i, int h) { return row_scale[i][h]; });
    }
  });
  const float scale = kBlock ? 1.0f : sa[0] * sw[0];
  for_each_pair(row0 + wrow, col0 + wcol, [&](int i, int j, int h, int row, int col) {
    store_pair(d, o.m, o.n, row, col, rowwise::from_f32<T>(kBlock ? total[i][j][2 * h] : total[i][j][2 * h] * scale),
               rowwise::from_f32<T>(kBlock ? total[i][j][2 * h + 1] : total[i][j][2 * h + 1] * scale));
  });
}

template <class T, bool kBlock> void launch_as(const Fp8Params& p, const Args& x) {
  allow_dynamic_smem<gemm_fp8_mma<T, kBlock>>(kSmem);
  const Operands o{static_cast<const uint8_t*>(x.in[p.kA].data()), static_cast<const uint8_t*>(x.in[p.kW].data()),
                   static_cast<int>(p.m), static_cast<int>(p.n), static_cast<int>(p.k)};
  const dim3 grid((p.n + kBN - 1) / kBN, (p.m + kBM - 1) / kBM);
  KL_LAUNCH((gemm_fp8_mma<T, kBlock>), grid, kThreads, kSmem, x.stream, o, static_cast<const float*>(x.in[p.kSa].data()),
            static_cast<const float*>(x.in[p.kSw].data()), static_cast<T*>(x.out[0].data()));
}
void launch(const Fp8Params& p, const Args& x) {
  fp8::with_type_and_scaling(p, [&](auto t, auto block) { launch_as<decltype(t), decltype(block)::value>(p, x); });
}

Reason supports(const Fp8Params& p) {
  if (p.m > INT32_MAX / 2 || p.n > INT32_MAX / 2 || p.k > INT32_MAX / 2) return "m, n and k must fit in 31 bits";
  if (p.m > int64_t(65535) * kBM) return "m beyond 65535 block rows of 128 (gridDim.y's limit)";
  if (const int cc = gemm_hopper::device_cc(); cc != 0 && cc < 89)
    return "mma.sync with e4m3 needs sm_89 or newer (Ada, Hopper), and this GPU is sm_" + std::to_string(cc);
  return {};
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<Fp8Params> r{
      .op = "gemm_fp8",
      .name = "cuda_mma_fp8",
      .note = "fp8 e4m3 tensor cores (mma.sync m16n8k32, sm_89+) on the int8 rung's tile; block scaling promotes the "
              "fp32 partial sums into fp32 registers with their 1x128 and 128x128 scales every 64 k (2 mma per "
              "accumulator, twice per scale block); a tensor scale is applied once, in the epilogue",
      .supports = supports,
      .configs = {{.name = "128x128x64_w64x32_4stages",
                   .threads = kThreads,
                   .dynamic_smem = kSmem,
                   .kernels = {{{KL_KERNEL(gemm_fp8_mma<__nv_bfloat16, true>), KL_KERNEL(gemm_fp8_mma<__half, true>),
                                 KL_KERNEL(gemm_fp8_mma<__nv_bfloat16, false>), KL_KERNEL(gemm_fp8_mma<__half, false>)},
                                {"mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32", "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
                                 "cp.async.cg.shared.global"},
                                {"HMMA.16816.F32", "LDSM.16.M88.4", "LDGSTS.E.BYPASS.128"}}},
                   .run = launch,
                   .tiling = Tiling{.block_m = kBM, .block_n = kBN, .block_k = kBK, .warp_m = kWM, .warp_n = kWN,
                                    .mma = "mma.sync.m16n8k32", .mma_m = 16, .mma_n = 8, .mma_k = 32, .stages = kStages}}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
