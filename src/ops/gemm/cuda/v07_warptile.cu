// gemm v07: warp tiling. The 128x128 block tile is split among 8 warps as 64x32 warp tiles, and
// each warp's tile into 2x2 sub-tiles of 32x16 in which lane l owns a 4x4 square (rows l/4,
// columns l%4). A warp's shared loads then touch 8 distinct A float4s and 4 distinct B float4s
// per k step (broadcasts within the warp), each thread does 64 multiply-adds per 4 16-byte
// loads, and BK = 16 halves the barriers per k against v06. `sim profile gemm` at 256^3: no
// shared-load bank conflicts (v06: 2 per request), D stores 16 sectors per request (v06: 32).
#include "ops/gemm/cuda/fp32.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using gemm_fp32::Operands;
constexpr int kBM = 128, kBN = 128, kBK = 16;
constexpr int kWM = 64, kWN = 32;           // warp tile
constexpr int kIterM = 2, kIterN = 2;       // sub-tiles per warp tile
constexpr int kSubM = kWM / kIterM, kSubN = kWN / kIterN;  // 32 x 16
constexpr int kTM = 4, kTN = 4;             // per lane per sub-tile
constexpr int kWarps = (kBM / kWM) * (kBN / kWN), kThreads = kWarps * 32;  // 8, 256
constexpr int kLoads = kBM * kBK / 4 / kThreads;  // float4s of A (and of B) per thread per tile: 2
static_assert((kSubM / kTM) * (kSubN / kTN) == 32, "a sub-tile is 32 lanes' squares");
static_assert(kBK * kBN / 4 / kThreads == kLoads, "as many B float4s as A float4s");

__global__ void gemm_warptile(Operands o) {
  KL_SHARED(float4, As4, [kBK][kBM / 4]);
  KL_SHARED(float4, Bs4, [kBK][kBN / 4]);
  float(*As)[kBM] = reinterpret_cast<float(*)[kBM]>(As4);  // transposed: As[l][i]
  float(*Bs)[kBN] = reinterpret_cast<float(*)[kBN]>(Bs4);
  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  const int wrow = (warp / (kBN / kWN)) * kWM, wcol = (warp % (kBN / kWN)) * kWN;  // the warp tile in the block tile
  const int lrow = (lane / (kSubN / kTN)) * kTM, lcol = (lane % (kSubN / kTN)) * kTN;  // the lane's square in a sub-tile
  const bool a_vec = o.k % 4 == 0, b_vec = o.n % 4 == 0;
  float acc[kIterM][kIterN][kTM][kTN] = {};
  for (int l0 = 0; l0 < o.k; l0 += kBK) {
    KL_UNROLL
    for (int s = 0; s < kLoads; ++s) {
      const int e = t + s * kThreads;
      const int ar = e / (kBK / 4), ac = (e % (kBK / 4)) * 4, br = e / (kBN / 4), bc = (e % (kBN / 4)) * 4;
      const int ai = row0 + ar, bl = l0 + br;
      const float4 a = gemm_fp32::load4(o.a, static_cast<int64_t>(ai) * o.k + l0 + ac, ai < o.m ? o.k - (l0 + ac) : 0, a_vec);
      const float4 b = gemm_fp32::load4(o.b, static_cast<int64_t>(bl) * o.n + col0 + bc, bl < o.k ? o.n - (col0 + bc) : 0, b_vec);
      As[ac + 0][ar] = a.x, As[ac + 1][ar] = a.y, As[ac + 2][ar] = a.z, As[ac + 3][ar] = a.w;
      *reinterpret_cast<float4*>(&Bs[br][bc]) = b;
    }
    __syncthreads();
    KL_UNROLL
    for (int l = 0; l < kBK; ++l) {
      float4 m[kIterM], n[kIterN];
      KL_UNROLL
      for (int wm = 0; wm < kIterM; ++wm) m[wm] = *reinterpret_cast<const float4*>(&As[l][wrow + wm * kSubM + lrow]);
      KL_UNROLL
      for (int wn = 0; wn < kIterN; ++wn) n[wn] = *reinterpret_cast<const float4*>(&Bs[l][wcol + wn * kSubN + lcol]);
      KL_UNROLL
      for (int wm = 0; wm < kIterM; ++wm)
        KL_UNROLL
        for (int wn = 0; wn < kIterN; ++wn) {
          const float mv[kTM] = {m[wm].x, m[wm].y, m[wm].z, m[wm].w}, nv[kTN] = {n[wn].x, n[wn].y, n[wn].z, n[wn].w};
          gemm_fp32::outer_product(acc[wm][wn], mv, nv);
        }
    }
    __syncthreads();
  }
  KL_UNROLL
  for (int wm = 0; wm < kIterM; ++wm)
    KL_UNROLL
    for (int wn = 0; wn < kIterN; ++wn)
      gemm_fp32::store_square(o, row0 + wrow + wm * kSubM + lrow, col0 + wcol + wn * kSubN + lcol, acc[wm][wn]);
}

void launch(const GemmParams& p, const Args& a) {
  const Operands o = gemm_fp32::operands(p, a);
  const dim3 grid((o.n + kBN - 1) / kBN, (o.m + kBM - 1) / kBM);
  KL_LAUNCH(gemm_warptile, grid, kThreads, 0, a.stream, o);
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<GemmParams> r{.op = "gemm",
                     .name = "cuda_warptile",
                     .note = "8 warps each own a 64x32 warp tile as 2x2 sub-tiles, lanes 4x4 squares in each: a warp's "
                             "shared loads are 12 distinct float4s per k step, BK 16 halves the barriers",
                     .supports = gemm_fp32::fp32_row_major,
                     .configs = {{.name = "128x128x16_w64x32",
                                  .threads = kThreads,
                                  .kernels = {{{KL_KERNEL(gemm_warptile)}, {"ld.shared.v4.f32", "fma.rn.f32"}, {"LDS.128", "FFMA"}}},
                                  .run = launch,
                                  .tiling = Tiling{.block_m = kBM, .block_n = kBN, .block_k = kBK, .warp_m = kWM, .warp_n = kWN, .thread_m = kIterM * kTM, .thread_n = kIterN * kTN}}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
