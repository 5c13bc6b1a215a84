// gemm v04: 1-D register blocking. A block computes a 64x64 tile of D with 512 threads, each
// thread 8 outputs down one column: per k step it loads one B value from shared memory into a
// register and reuses it 8 times against 8 A values. Shared loads per multiply-add fall from 2
// to 9/8, and each thread keeps 8 accumulators in registers.
#include "ops/gemm/cuda/fp32.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using gemm_fp32::Operands;
constexpr int kBM = 64, kBN = 64, kBK = 8, kTM = 8;
constexpr int kThreads = kBM * kBN / kTM;  // 512
static_assert(kThreads == kBM * kBK && kThreads == kBK * kBN, "one A and one B element per thread per tile");

__global__ void gemm_1d_blocktile(Operands o) {
  KL_SHARED(float, As, [kBM][kBK]);
  KL_SHARED(float, Bs, [kBK][kBN]);
  const int t = threadIdx.x;
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  const int tcol = t % kBN, trow = t / kBN;  // this thread's outputs: rows trow*8 .. +8 of column tcol
  const int a_r = t / kBK, a_c = t % kBK;    // the A element this thread loads
  const int b_r = t / kBN, b_c = t % kBN;    // the B element
  float acc[kTM][1] = {};  // a column of 8
  for (int l0 = 0; l0 < o.k; l0 += kBK) {
    const int ai = row0 + a_r, al = l0 + a_c, bl = l0 + b_r, bj = col0 + b_c;
    As[a_r][a_c] = ai < o.m && al < o.k ? o.a[static_cast<int64_t>(ai) * o.k + al] : 0.0f;
    Bs[b_r][b_c] = bl < o.k && bj < o.n ? o.b[static_cast<int64_t>(bl) * o.n + bj] : 0.0f;
    __syncthreads();
    KL_UNROLL
    for (int l = 0; l < kBK; ++l) {
      const float b = Bs[l][tcol];
      KL_UNROLL
      for (int r = 0; r < kTM; ++r) acc[r][0] += As[trow * kTM + r][l] * b;
    }
    __syncthreads();
  }
  gemm_fp32::store_square(o, row0 + trow * kTM, col0 + tcol, acc);
}

void launch(const GemmParams& p, const Args& a) {
  const Operands o = gemm_fp32::operands(p, a);
  const dim3 grid((o.n + kBN - 1) / kBN, (o.m + kBM - 1) / kBM);
  KL_LAUNCH(gemm_1d_blocktile, grid, kThreads, 0, a.stream, o);
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<GemmParams> r{.op = "gemm",
                     .name = "cuda_1d_blocktile",
                     .note = "64x64 block tile, 8 outputs per thread down a column: one B value in a register serves 8 "
                             "multiply-adds, 9 shared loads per 8 of them",
                     .supports = gemm_fp32::fp32_row_major,
                     .configs = {{.name = "64x64x8_tm8",
                                  .threads = kThreads,
                                  .kernels = {{{KL_KERNEL(gemm_1d_blocktile)}, {"ld.shared.f32", "fma.rn.f32"}, {"LDS", "FFMA"}}},
                                  .run = launch,
                                  .tiling = Tiling{.block_m = kBM, .block_n = kBN, .block_k = kBK, .warp_m = kTM, .warp_n = 32, .thread_m = kTM, .thread_n = 1}}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
