// The CUDA rungs of layernorm and rmsnorm (src/ops/norm/cuda), in ladder order. Each rung's
// source serves both kinds; its launcher _layer or _rms fixes the kind at compile time.
#include "ops/gpu_variants.h"
#include "ops/norm/norm.h"

#define KL_DECLARE_NORM_RUNG(fn)      \
  KL_DECLARE_GPU_RUNG(fn##_layer)     \
  KL_DECLARE_GPU_RUNG(fn##_rms)
KL_DECLARE_NORM_RUNG(norm_v01_unfused)
KL_DECLARE_NORM_RUNG(norm_v02_welford)
KL_DECLARE_NORM_RUNG(norm_v03_fused_vectorized)
#define KL_NORM_RUNG(kind, fn) ((kind) == NormKind::layer ? KL_GPU_RUNG(fn##_layer) : KL_GPU_RUNG(fn##_rms))

namespace kl {

std::vector<Variant> norm_gpu_variants(NormKind kind) {
  Variant unfused = gpu_variant("cuda_unfused",
                                "three kernels through memory: residual sum written and read back, two-pass row statistics into a workspace, then y elementwise: the row read three or four times, three launches",
                                KL_NORM_RUNG(kind, norm_v01_unfused), "norm/cuda/v01_unfused.cu", {"bar.sync", "st.shared"}, 256);
  unfused.workspace_bytes = [](const Problem& p) { return static_cast<size_t>(2 * p.dim("rows")) * sizeof(float); };
  Variant fused = gpu_variant("cuda_fused_vectorized",
                              "the row held in registers between statistics and normalise: x and residual read once, y and h written once, 16-byte vector loads and stores where rows are aligned",
                              KL_NORM_RUNG(kind, norm_v03_fused_vectorized), "norm/cuda/v03_fused_vectorized.cu",
                              {"ld.global.nc.v4", "st.global.v4", "shfl.sync"},
                              256);  // blocks grow with cols (32 to 1024 threads): 256 at the report's 4096 columns
  fused.supports = [](const Problem& p) -> Reason {
    if (p.dim("cols") <= kNormFusedMaxCols) return {};
    return "cols=" + std::to_string(p.dim("cols")) + " is over the " + std::to_string(kNormFusedMaxCols) +
           " values a block holds in registers (1024 threads x 16); cuda_welford takes any length";
  };
  return {unfused,
          gpu_variant("cuda_welford",
                      "one kernel, a block per row: residual add and Welford mean/variance in one read, merged by warp shuffles and shared memory, then a normalising read: two reads of the row, one launch",
                      KL_NORM_RUNG(kind, norm_v02_welford), "norm/cuda/v02_welford.cu", {"shfl.sync", "bar.sync"}, 256),
          fused};
}

}  // namespace kl
