// gemm_w8a8 v01: int8 tensor cores. A and W tiles reach shared memory by a 4-stage cp.async
// pipeline into XOR-swizzled 16-byte chunks, ldmatrix loads the fragments (k32_tile.cuh works out
// why a b16 8x8 matrix is an int8 8x16 fragment), mma.sync m16n8k32 s8 sums exactly in int32, and
// the scales are applied once, in the epilogue: D = float(acc) * sa[row] * sw[col], rounded to the dtype.
#include "ops/gemm_w8a8/cuda/k32_tile.cuh"
#include "ops/gemm_w8a8/gemm_w8a8.h"
#include "ops/gpu_rowwise.h"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using namespace k32_tile;

struct S8Mma {
  __device__ __forceinline__ void operator()(int (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) const {
    kl::ptx::mma_m16n8k32_s8_s32(d, a, b, d);
  }
};

template <class T>
__global__ void __launch_bounds__(kThreads, 2)
    gemm_w8a8_mma(Operands o, const float* __restrict__ sa, const float* __restrict__ sw, T* __restrict__ d) {
  KL_DYNAMIC_SHARED(Stage, stages);
  const int warp = threadIdx.x / 32, row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  const int wrow = (warp / (kBN / kWN)) * kWM, wcol = (warp % (kBN / kWN)) * kWN;
  int acc[kTilesM][kTilesN][4] = {};
  mainloop(stages, o, row0, col0, (o.k + kBK - 1) / kBK,
           [&](const Stage& s, int) { warp_tile_mma(s, wrow, wcol, acc, S8Mma{}); });
  for_each_pair(row0 + wrow, col0 + wcol, [&](int i, int j, int h, int row, int col) {
    if (row >= o.m || col >= o.n) return;
    const float s = sa[row], w0 = sw[col], w1 = col + 1 < o.n ? sw[col + 1] : 0.0f;
    store_pair(d, o.m, o.n, row, col, rowwise::from_f32<T>(float(acc[i][j][2 * h]) * s * w0),
               rowwise::from_f32<T>(float(acc[i][j][2 * h + 1]) * s * w1));
  });
}

template <class T> void launch_as(const W8A8Params& p, const Args& x) {
  allow_dynamic_smem<gemm_w8a8_mma<T>>(kSmem);
  const Operands o{static_cast<const uint8_t*>(x.in[p.kA].data()), static_cast<const uint8_t*>(x.in[p.kW].data()),
                   static_cast<int>(p.m), static_cast<int>(p.n), static_cast<int>(p.k)};
  const dim3 grid((p.n + kBN - 1) / kBN, (p.m + kBM - 1) / kBM);
  KL_LAUNCH(gemm_w8a8_mma<T>, grid, kThreads, kSmem, x.stream, o, static_cast<const float*>(x.in[p.kSa].data()),
            static_cast<const float*>(x.in[p.kSw].data()), static_cast<T*>(x.out[0].data()));
}
void launch(const W8A8Params& p, const Args& x) {
  if (p.dtype == DType::f16) launch_as<__half>(p, x);
  else launch_as<__nv_bfloat16>(p, x);
}

static_assert(kBM == 128, "int8_rung_sizes counts block rows of 128");
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<W8A8Params> r{
      .op = "gemm_w8a8",
      .name = "cuda_mma_s8",
      .note = "int8 tensor cores: mma.sync m16n8k32 s8 with exact int32 sums, fragments by ldmatrix from swizzled tiles "
              "that a 4-stage cp.async pipeline fills; the per-token and per-channel scales applied once, in the epilogue",
      .supports = int8_rung_sizes,
      .configs = {{.name = "128x128x64_w64x32_4stages",
                   .threads = kThreads,
                   .dynamic_smem = kSmem,
                   .kernels = {{{KL_KERNEL(gemm_w8a8_mma<__half>), KL_KERNEL(gemm_w8a8_mma<__nv_bfloat16>)},
                                {"mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32", "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
                                 "cp.async.cg.shared.global", "cp.async.wait_group"},
                                {"IMMA.16832.S8.S8", "LDSM.16.M88.4", "LDGSTS.E.BYPASS.128"}}},
                   .run = launch,
                   .tiling = Tiling{.block_m = kBM, .block_n = kBN, .block_k = kBK, .warp_m = kWM, .warp_n = kWN,
                                    .mma = "mma.sync.m16n8k32", .mma_m = 16, .mma_n = 8, .mma_k = 32, .stages = kStages}}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
