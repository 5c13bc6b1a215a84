// gemm v10: v09's warp tiles fed by a 4-stage cp.async pipeline (cp_async_pipeline.cuh). Tile k+3
// is copied global -> shared (cp.async.cg, 16 bytes, no registers, no wait) while the warps
// multiply tile k, so a warp stalls on memory only when the copies fall 3 tiles behind. The stage
// count is Little's law: at the bf16 peak an H100 SXM's SM consumes (989 TFLOP/s / 132) / 64
// FLOP/B = 117 GB/s of tiles, so a load latency L needs 117 B/ns x L in flight; with 2 blocks
// per SM, 3 stages of 16 KB in flight cover L up to about 800 ns (`explain gemm --rung
// cuda_cp_async` computes it for any GPU and latency; the latency itself is measured by
// exp_cache_latency). 64 KB of dynamic shared memory per block.
#include "ops/gemm/cuda/cp_async_pipeline.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using namespace gemm_mma;
constexpr int kSmem = kPipelineSmem;  // 64 KB

template <class T> __global__ void __launch_bounds__(kThreads, 2) gemm_cp_async(Operands<T> o) {
  KL_DYNAMIC_SHARED(Stage, stages);
  const int warp = threadIdx.x / 32, row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  float acc[kTilesM][kTilesN][4] = {};
  cp_async_mainloop(stages, o, row0, col0, 0, (o.k + kBK - 1) / kBK, acc);
  store_warp_tile(o, row0 + (warp / (kBN / kWN)) * kWM, col0 + (warp % (kBN / kWN)) * kWN, acc);
}

template <class T> void launch_as(const GemmParams& p, const Args& a) {
  allow_dynamic_smem<gemm_cp_async<T>>(kSmem);
  const dim3 grid((p.n + kBN - 1) / kBN, (p.m + kBM - 1) / kBM);
  KL_LAUNCH(gemm_cp_async<T>, grid, kThreads, kSmem, a.stream, gemm_tc::operands<T>(p, a));
}
void launch(const GemmParams& p, const Args& a) {
  gemm_tc::with_half(p.a, [&](auto e) { launch_as<decltype(e)>(p, a); });
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<GemmParams> r{
      .op = "gemm",
      .name = "cuda_cp_async",
      .note = "v09's warp tiles fed by a 4-stage cp.async pipeline (16-byte global->shared copies, no registers): "
              "tile k+3 is in flight while tile k is multiplied; 64 KB of shared memory per block",
      .supports = gemm_tc::half_row_major,
      .configs = {{.name = "128x128x32_w64x32_4stages",
                   .threads = kThreads,
                   .dynamic_smem = kSmem,
                   .kernels = {{gemm_tc::for_halves([](auto e) { return KL_KERNEL(gemm_cp_async<decltype(e)>); }),
                                {"cp.async.cg.shared.global", "cp.async.wait_group", "mma.sync.aligned.m16n8k16.row.col.f32",
                                 "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"},
                                {"LDGSTS.E.BYPASS.128", "HMMA.16816.F32", "LDSM.16.MT88.4"}}},
                   .run = launch,
                                  .tiling = Tiling{.block_m = kBM, .block_n = kBN, .block_k = kBK, .warp_m = kWM, .warp_n = kWN, .mma = "mma.sync.m16n8k16", .mma_m = 16, .mma_n = 8, .mma_k = 16, .stages = kStages}}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
