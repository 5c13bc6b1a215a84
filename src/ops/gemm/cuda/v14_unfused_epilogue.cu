// gemm v14: the epilogue unfused, for comparison with the rungs that apply it in their stores
// (every other rung here). v10's kernel writes alpha*A*B + beta*C to D, rounded; a second kernel
// reads D back with the bias and R and writes act(D + bias) + R: D crosses memory three times
// instead of once, 2*m*n*e more bytes (the bytes the fused rungs save: 4 MiB at 1024^2 bf16),
// a second launch, and a second rounding of D.
#include "ops/gemm/cuda/cp_async_pipeline.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using namespace gemm_mma;

template <class T> __global__ void __launch_bounds__(kThreads, 2) gemm_no_epilogue(Operands<T> o) {
  KL_DYNAMIC_SHARED(Stage, stages);
  const int warp = threadIdx.x / 32, row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  float acc[kTilesM][kTilesN][4] = {};
  cp_async_mainloop(stages, o, row0, col0, 0, (o.k + kBK - 1) / kBK, acc);
  store_warp_tile(o, row0 + (warp / (kBN / kWN)) * kWM, col0 + (warp % (kBN / kWN)) * kWN, acc);
}

// D = act(D + bias) + R, one element per thread of a grid-stride loop.
template <class T> __global__ void epilogue_pass(Operands<T> o) {
  const int64_t total = static_cast<int64_t>(o.m) * o.n;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total; e += int64_t{gridDim.x} * blockDim.x) {
    const int j = static_cast<int>(e % o.n);
    float v = gemm_tc::to_f32(o.d[e]);
    if (o.epilogue != GemmEpilogue::none) v = gemm_epilogue::activate(o.epilogue, v + gemm_tc::to_f32(o.epi.bias[j]));
    if (o.epi.r) v += gemm_tc::to_f32(o.epi.r[e]);
    o.d[e] = gemm_tc::from_f32<T>(v);
  }
}

template <class T> void launch_as(const GemmParams& p, const Args& a) {
  allow_dynamic_smem<gemm_no_epilogue<T>>(kPipelineSmem);
  const Operands<T> o = gemm_tc::operands<T>(p, a);
  Operands<T> plain = o;
  plain.epilogue = GemmEpilogue::none, plain.epi = {};
  const dim3 grid((o.n + kBN - 1) / kBN, (o.m + kBM - 1) / kBM);
  KL_LAUNCH(gemm_no_epilogue<T>, grid, kThreads, kPipelineSmem, a.stream, plain);
  KL_LAUNCH(epilogue_pass<T>, rowwise::grid_for(static_cast<int64_t>(o.m) * o.n, 256), 256, 0, a.stream, o);
}
void launch(const GemmParams& p, const Args& a) {
  gemm_tc::with_half(p.a, [&](auto e) { launch_as<decltype(e)>(p, a); });
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<GemmParams> r{
      .op = "gemm",
      .name = "cuda_unfused_epilogue",
      .note = "the epilogue as its own kernel after v10's gemm: D written, read back with bias and R, written again: 2*m*n*e "
              "more bytes than the fused rungs, a second launch and a second rounding",
      .supports = [](const GemmParams& p) -> Reason {
        Reason r = gemm_tc::half_row_major(p);  // one named result: GCC 12 warns falsely (-Warray-bounds) on copying it out
        if (!r && p.plain()) r = "the unfused pair needs an epilogue to unfuse (--epilogue or --residual 1)";
        return r;
      },
      .configs = {{.name = "cp_async_then_pass",
                   .threads = kThreads,
                   .dynamic_smem = kPipelineSmem,
                   .kernels = {{gemm_tc::for_halves([](auto e) { return KL_KERNEL(gemm_no_epilogue<decltype(e)>); }),
                                {"cp.async.cg.shared.global", "mma.sync.aligned.m16n8k16.row.col.f32"},
                                {"LDGSTS.E.BYPASS.128", "HMMA.16816.F32"}},
                               {gemm_tc::for_halves([](auto e) { return KL_KERNEL(epilogue_pass<decltype(e)>); }), {}, {}}},
                   .run = launch,
                   .tiling = Tiling{.block_m = kBM, .block_n = kBN, .block_k = kBK, .warp_m = kWM, .warp_n = kWN,
                                    .mma = "mma.sync.m16n8k16", .mma_m = 16, .mma_n = 8, .mma_k = 16, .stages = kStages}}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
