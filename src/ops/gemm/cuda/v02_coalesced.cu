// gemm v02: the same thread per output, with consecutive threads on consecutive columns of D:
// a warp now reads one A element (a broadcast) and 32 consecutive B elements (4 sectors), and
// writes 32 consecutive D elements. Every operand still comes from global memory: 2 loads
// per multiply-add, so the kernel is bound by L1/L2 bandwidth at any size.
#include "ops/gemm/cuda/fp32.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using gemm_fp32::Operands;
constexpr int kBlockX = 32, kBlockY = 8;

__global__ void gemm_coalesced(Operands o, bool a_col, bool b_col) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;  // column of D: the fast index
  const int i = blockIdx.y * blockDim.y + threadIdx.y;  // row of D
  if (i >= o.m || j >= o.n) return;
  float acc = 0.0f;
  for (int l = 0; l < o.k; ++l) {
    acc += gemm_fp32::a_at(o, i, l, a_col) * gemm_fp32::b_at(o, l, j, b_col);
  }
  gemm_fp32::store(o, i, j, acc);
}

void launch(const GemmParams& p, const Args& a) {
  const Operands o = gemm_fp32::operands(p, a);
  const dim3 block(kBlockX, kBlockY), grid((o.n + kBlockX - 1) / kBlockX, (o.m + kBlockY - 1) / kBlockY);
  KL_LAUNCH(gemm_coalesced, grid, block, 0, a.stream, o, p.a_col, p.b_col);
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<GemmParams> r{.op = "gemm",
                     .name = "cuda_coalesced",
                     .note = "threads along columns of D: B and D accesses coalesced (4 sectors per warp), A a broadcast; "
                             "still 2 global loads per multiply-add",
                     .supports = gemm_fp32::fp32_only,
                     .configs = {{.name = "32x8_threads",
                                  .threads = kBlockX * kBlockY,
                                  .kernels = {{{KL_KERNEL(gemm_coalesced)}, {}, {}}},
                                  .run = launch}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
