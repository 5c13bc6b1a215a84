// gemm v05: 2-D register blocking. A block computes a 128x128 tile of D with 256 threads, each
// thread an 8x8 square: per k step it loads 8 A and 8 B values from shared memory into registers
// and does 64 multiply-adds with them, 16 shared loads per 64 (v04: 9 per 8). The block tile
// doubles too, so each global load serves 128 multiply-adds. What it costs (`sim profile gemm`
// at 256^3): its shared loads are bank-conflicted, 2 extra wavefronts per request on average
// (As rows of threads 16 apart are 64 words apart, one bank: 2-way; Bs columns 8 words apart:
// 4-way), and D stores take 32 sectors per request (a thread writes 8 adjacent columns).
#include "ops/gemm/cuda/fp32.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using gemm_fp32::Operands;
constexpr int kBM = 128, kBN = 128, kBK = 8, kTM = 8, kTN = 8;
constexpr int kThreads = (kBM / kTM) * (kBN / kTN);  // 256
constexpr int kLoads = kBM * kBK / kThreads;         // A (and B) elements per thread per tile: 4

__global__ void gemm_2d_blocktile(Operands o) {
  KL_SHARED(float, As, [kBM][kBK]);
  KL_SHARED(float, Bs, [kBK][kBN]);
  const int t = threadIdx.x;
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  const int trow = t / (kBN / kTN), tcol = t % (kBN / kTN);
  float acc[kTM][kTN] = {}, reg_m[kTM], reg_n[kTN];
  for (int l0 = 0; l0 < o.k; l0 += kBK) {
    KL_UNROLL
    for (int s = 0; s < kLoads; ++s) {
      const int e = t + s * kThreads;
      const int ar = e / kBK, ac = e % kBK, br = e / kBN, bc = e % kBN;
      const int ai = row0 + ar, al = l0 + ac, bl = l0 + br, bj = col0 + bc;
      As[ar][ac] = ai < o.m && al < o.k ? o.a[static_cast<int64_t>(ai) * o.k + al] : 0.0f;
      Bs[br][bc] = bl < o.k && bj < o.n ? o.b[static_cast<int64_t>(bl) * o.n + bj] : 0.0f;
    }
    __syncthreads();
    KL_UNROLL
    for (int l = 0; l < kBK; ++l) {
      KL_UNROLL
      for (int r = 0; r < kTM; ++r) reg_m[r] = As[trow * kTM + r][l];
      KL_UNROLL
      for (int c = 0; c < kTN; ++c) reg_n[c] = Bs[l][tcol * kTN + c];
      gemm_fp32::outer_product(acc, reg_m, reg_n);
    }
    __syncthreads();
  }
  gemm_fp32::store_square(o, row0 + trow * kTM, col0 + tcol * kTN, acc);
}

void launch(const GemmParams& p, const Args& a) {
  const Operands o = gemm_fp32::operands(p, a);
  const dim3 grid((o.n + kBN - 1) / kBN, (o.m + kBM - 1) / kBM);
  KL_LAUNCH(gemm_2d_blocktile, grid, kThreads, 0, a.stream, o);
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<GemmParams> r{.op = "gemm",
                     .name = "cuda_2d_blocktile",
                     .note = "128x128 block tile, an 8x8 square of outputs per thread: 16 shared loads per 64 "
                             "multiply-adds, each global load serving 128",
                     .supports = gemm_fp32::fp32_row_major,
                     .configs = {{.name = "128x128x8_8x8",
                                  .threads = kThreads,
                                  .kernels = {{{KL_KERNEL(gemm_2d_blocktile)}, {"ld.shared.f32", "fma.rn.f32"}, {"LDS", "FFMA"}}},
                                  .run = launch,
                                  .tiling = Tiling{.block_m = kBM, .block_n = kBN, .block_k = kBK, .warp_m = 2 * kTM, .warp_n = 16 * kTN, .thread_m = kTM, .thread_n = kTN}}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
