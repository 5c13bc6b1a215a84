// gemm v01: one thread per output, consecutive threads on consecutive rows of D. A warp then
// reads 32 rows of A at the same k (32 sectors per request, k*4 bytes apart), the same B
// element (a broadcast), and writes 32 rows of D: every access of A and D is uncoalesced.
#include "ops/gemm/cuda/fp32.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using gemm_fp32::Operands;
constexpr int kBlockX = 32, kBlockY = 8;

__global__ void gemm_naive(Operands o, bool a_col, bool b_col) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;  // row of D: the fast index
  const int j = blockIdx.y * blockDim.y + threadIdx.y;  // column of D
  if (i >= o.m || j >= o.n) return;
  float acc = 0.0f;
  for (int l = 0; l < o.k; ++l) {
    acc += gemm_fp32::a_at(o, i, l, a_col) * gemm_fp32::b_at(o, l, j, b_col);
  }
  gemm_fp32::store(o, i, j, acc);
}

void launch(const GemmParams& p, const Args& a) {
  const Operands o = gemm_fp32::operands(p, a);
  const dim3 block(kBlockX, kBlockY), grid((o.m + kBlockX - 1) / kBlockX, (o.n + kBlockY - 1) / kBlockY);
  KL_LAUNCH(gemm_naive, grid, block, 0, a.stream, o, p.a_col, p.b_col);
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<GemmParams> r{.op = "gemm",
                     .name = "cuda_naive",
                     .note = "one thread per output, threads along rows of D: A and D accessed 32 cache lines per warp, "
                             "every operand from global memory",
                     .supports = gemm_fp32::fp32_only,
                     .configs = {{.name = "32x8_threads",
                                  .threads = kBlockX * kBlockY,
                                  .kernels = {{{KL_KERNEL(gemm_naive)}, {}, {}}},
                                  .run = launch}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
