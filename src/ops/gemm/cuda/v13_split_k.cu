// gemm v13: split-K for skinny problems (decode: m of 1 to 64 against k of 4096 and more). With
// one 128x128 tile per block, m = 16 and n = 4096 make 32 blocks for 132 SMs: most SMs idle while
// the weights stream. Split k into S slices (S = k / 1024, at most 16) and the grid has S times
// the blocks; each writes its fp32 partial tile to a workspace (S x m x n floats) and a second
// kernel sums the S partials in slice order (deterministic, no atomics), applies alpha and beta
// and rounds once. The price is the workspace's write and read, 8 S m n bytes: nothing at m = 1,
// the crossover with v10 that `sweep gemm --axis m=...` finds as m grows.
#include "ops/gemm/cuda/cp_async_pipeline.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using namespace gemm_mma;

constexpr int kSliceK = 1024;  // k per slice, at most 16 slices

int splits_of(const GemmParams& p) {
  const int64_t k_tiles = (p.k + kBK - 1) / kBK;
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>({16, p.k / kSliceK, k_tiles})));
}

template <class T>
__global__ void __launch_bounds__(kThreads, 2) gemm_split_k_partial(Operands<T> o, float* __restrict__ partial, int tiles_per_split) {
  KL_DYNAMIC_SHARED(Stage, stages);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN, split = blockIdx.z;
  const int k_tiles = (o.k + kBK - 1) / kBK, t0 = split * tiles_per_split, t1 = min(t0 + tiles_per_split, k_tiles);
  float acc[kTilesM][kTilesN][4] = {};
  cp_async_mainloop(stages, o, row0, col0, t0, t1, acc);
  float* out = partial + static_cast<int64_t>(split) * o.m * o.n;
  const int wrow = row0 + (warp / (kBN / kWN)) * kWM, wcol = col0 + (warp % (kBN / kWN)) * kWN;
  KL_UNROLL
  for (int i = 0; i < kTilesM; ++i)
    KL_UNROLL
    for (int j = 0; j < kTilesN; ++j)
      KL_UNROLL
      for (int h = 0; h < 2; ++h) {
        const int r = wrow + 16 * i + g + 8 * h, c = wcol + 8 * j + 2 * t;
        if (r >= o.m || c >= o.n) continue;
        float* at = out + static_cast<int64_t>(r) * o.n + c;
        if (c + 1 < o.n && o.n % 2 == 0) *reinterpret_cast<float2*>(at) = make_float2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
        else {
          at[0] = acc[i][j][2 * h];
          if (c + 1 < o.n) at[1] = acc[i][j][2 * h + 1];
        }
      }
}

// D = alpha * (sum of the S partials, in slice order) + beta * C, one element per thread.
template <class T> __global__ void split_k_reduce(Operands<T> o, const float* __restrict__ partial, int splits) {
  const int64_t total = static_cast<int64_t>(o.m) * o.n;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total; e += int64_t{gridDim.x} * blockDim.x) {
    float sum = 0.0f;
    for (int s = 0; s < splits; ++s) sum += partial[s * total + e];
    gemm_tc::store(o, static_cast<int>(e / o.n), static_cast<int>(e % o.n), sum);
  }
}

template <class T> void launch_as(const GemmParams& p, const Args& a) {
  allow_dynamic_smem<gemm_split_k_partial<T>>(kPipelineSmem);
  const Operands<T> o = gemm_tc::operands<T>(p, a);
  const int splits = splits_of(p), k_tiles = (o.k + kBK - 1) / kBK, per_split = (k_tiles + splits - 1) / splits;
  const int used = (k_tiles + per_split - 1) / per_split;  // slices that have work after rounding
  float* partial = static_cast<float*>(a.workspace);
  const dim3 grid((o.n + kBN - 1) / kBN, (o.m + kBM - 1) / kBM, used);
  KL_LAUNCH(gemm_split_k_partial<T>, grid, kThreads, kPipelineSmem, a.stream, o, partial, per_split);
  KL_LAUNCH(split_k_reduce<T>, rowwise::grid_for(static_cast<int64_t>(o.m) * o.n, 256), 256, 0, a.stream, o,
            static_cast<const float*>(partial), used);
}
void launch(const GemmParams& p, const Args& a) {
  gemm_tc::with_half(p.a, [&](auto e) { launch_as<decltype(e)>(p, a); });
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<GemmParams> r{
      .op = "gemm",
      .name = "cuda_split_k",
      .note = "split-K for skinny m: k cut into S = k/1024 slices (at most 16), S times the blocks of v10, fp32 partials "
              "summed in slice order by a second kernel; pays 8*S*m*n workspace bytes",
      .supports = gemm_tc::half_row_major,
      .workspace_bytes = [](const GemmParams& p) { return size_t(splits_of(p)) * size_t(p.m) * size_t(p.n) * sizeof(float); },
      .configs = {{.name = "128x128x32_4stages_k1024",
                   .threads = kThreads,
                   .dynamic_smem = kPipelineSmem,
                   .kernels = {{gemm_tc::for_halves([](auto e) { return KL_KERNEL(gemm_split_k_partial<decltype(e)>); }),
                                {"cp.async.cg.shared.global", "mma.sync.aligned.m16n8k16.row.col.f32"},
                                {"LDGSTS.E.BYPASS.128", "HMMA.16816.F32"}},
                               {gemm_tc::for_halves([](auto e) { return KL_KERNEL(split_k_reduce<decltype(e)>); }), {}, {}}},
                   .run = launch,
                   .tiling = Tiling{.block_m = kBM, .block_n = kBN, .block_k = kBK, .warp_m = kWM, .warp_n = kWN,
                                    .mma = "mma.sync.m16n8k16", .mma_m = 16, .mma_n = 8, .mma_k = 16, .stages = kStages,
                                    .split_k = kSliceK}}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
