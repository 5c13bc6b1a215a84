// gemm v09: mma.sync m16n8k16 by hand, fed by ldmatrix from swizzled shared memory. The 128x128x32
// block tile is 16-byte chunks XOR-swizzled so that every ldmatrix and every tile store is free
// of bank conflicts (mma_tile.cuh); each of 8 warps computes 64x32 of D, 16 mma per k16 step
// from 4 ldmatrix.x4 of A and 2 ldmatrix.x4.trans of B (B stays row-major in shared memory;
// .trans gives mma its k-major fragment). Against v08, the fragments' layout is ours: D leaves
// straight from the registers with 4-byte pair stores, and the block tile is 4x larger. The
// tile is still loaded through registers and the warps wait for it: v10 overlaps that.
#include "ops/gemm/cuda/mma_tile.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using namespace gemm_mma;

template <class T> __global__ void __launch_bounds__(kThreads, 2) gemm_mma_ldmatrix(Operands<T> o) {
  KL_SHARED(Stage, s, [1]);
  const int t = threadIdx.x, warp = t / 32;
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  const int wrow = (warp / (kBN / kWN)) * kWM, wcol = (warp % (kBN / kWN)) * kWN;
  const bool a_vec = o.k % 8 == 0, b_vec = o.n % 8 == 0;
  float acc[kTilesM][kTilesN][4] = {};
  for (int l0 = 0; l0 < o.k; l0 += kBK) {
    KL_UNROLL
    for (int q = 0; q < kLoads; ++q) {
      const int ra = a_row(t, q), ca = a_chunk(t, q), i = row0 + ra, rb = b_row(t, q), cb = b_chunk(t, q), l = l0 + rb;
      s[0].a[ra][swizzle_a(ra, ca)] =
          gemm_tc::load_chunk(o.a, static_cast<int64_t>(i) * o.k + l0 + 8 * ca, i < o.m ? o.k - (l0 + 8 * ca) : 0, a_vec);
      s[0].b[rb][swizzle_b(rb, cb)] =
          gemm_tc::load_chunk(o.b, static_cast<int64_t>(l) * o.n + col0 + 8 * cb, l < o.k ? o.n - (col0 + 8 * cb) : 0, b_vec);
    }
    __syncthreads();
    warp_tile_mma<T>(s[0], wrow, wcol, acc);
    __syncthreads();
  }
  store_warp_tile(o, row0 + wrow, col0 + wcol, acc);
}

template <class T> void launch_as(const GemmParams& p, const Args& a) {
  const dim3 grid((p.n + kBN - 1) / kBN, (p.m + kBM - 1) / kBM);
  KL_LAUNCH(gemm_mma_ldmatrix<T>, grid, kThreads, 0, a.stream, gemm_tc::operands<T>(p, a));
}
void launch(const GemmParams& p, const Args& a) {
  gemm_tc::with_half(p.a, [&](auto e) { launch_as<decltype(e)>(p, a); });
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<GemmParams> r{
      .op = "gemm",
      .name = "cuda_mma_ldmatrix",
      .note = "mma.sync m16n8k16 by hand: 8 warps each 64x32 of a 128x128x32 tile, fragments by ldmatrix(.trans) from "
              "XOR-swizzled shared memory (no bank conflicts), D stored from registers",
      .supports = gemm_tc::half_row_major,
      .configs = {{.name = "128x128x32_w64x32",
                   .threads = kThreads,
                   .kernels = {{gemm_tc::for_halves([](auto e) { return KL_KERNEL(gemm_mma_ldmatrix<decltype(e)>); }),
                                {"mma.sync.aligned.m16n8k16.row.col.f32", "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
                                 "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"},
                                {"HMMA.16816.F32", "LDSM.16.M88.4", "LDSM.16.MT88.4"}}},
                   .run = launch,
                                  .tiling = Tiling{.block_m = kBM, .block_n = kBN, .block_k = kBK, .warp_m = kWM, .warp_n = kWN, .mma = "mma.sync.m16n8k16", .mma_m = 16, .mma_n = 8, .mma_k = 16}}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
