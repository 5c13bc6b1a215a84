// The CUDA rungs of softmax (src/ops/softmax/cuda), in ladder order.
#include "ops/gpu_variants.h"
#include "ops/softmax/softmax.h"

KL_DECLARE_GPU_RUNG(softmax_v01_three_kernels)
KL_DECLARE_GPU_RUNG(softmax_v02_fused_block)
KL_DECLARE_GPU_RUNG(softmax_v03_online)
KL_DECLARE_GPU_RUNG(softmax_v04_warp_vectorized)

namespace kl {

std::vector<Variant> softmax_gpu_variants() {
  Variant three = gpu_variant("cuda_three_kernels",
                              "three kernels (row max, sum of exponentials, normalise) through a workspace of per-row max and sum: x read from HBM three times, three launches",
                              KL_GPU_RUNG(softmax_v01_three_kernels), "softmax/cuda/v01_three_kernels.cu", {"bar.sync", "ex2.approx"}, 256);
  three.workspace_bytes = [](const Problem& p) { return static_cast<size_t>(2 * p.dim("rows")) * sizeof(float); };
  Variant warp = gpu_variant("cuda_warp_vectorized",
                             "a warp per row (up to 1024 columns) holding the row in registers, read once with 16-byte vector loads, max and sum by warp shuffles: one read of x, no shared memory, no barriers",
                             KL_GPU_RUNG(softmax_v04_warp_vectorized), "softmax/cuda/v04_warp_vectorized.cu", {"shfl.sync", "ld.global.nc.v4", "st.global.v4"}, 256);
  warp.supports = [](const Problem& p) -> Reason {
    if (p.dim("cols") <= kSoftmaxWarpMaxCols) return {};
    return "cols=" + std::to_string(p.dim("cols")) + " is over the " + std::to_string(kSoftmaxWarpMaxCols) +
           " columns a warp holds in registers (32 per lane); cuda_online takes any length";
  };
  return {three,
          gpu_variant("cuda_fused_block",
                      "one kernel, a block per row, max and sum as shared-memory block reductions: no workspace round trip, one launch, the re-reads of a row mostly hit L2",
                      KL_GPU_RUNG(softmax_v02_fused_block), "softmax/cuda/v02_fused_block.cu", {"bar.sync", "st.shared"}, 256),
          gpu_variant("cuda_online",
                      "online softmax: a running max and a rescaled sum in one read of the row and one (max, sum) block reduction, then a pass writing y: two reads of x instead of three",
                      KL_GPU_RUNG(softmax_v03_online), "softmax/cuda/v03_online.cu", {"bar.sync", "st.shared"}, 256),
          warp};
}

}  // namespace kl
