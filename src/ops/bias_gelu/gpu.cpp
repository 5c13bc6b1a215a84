// The CUDA rungs of bias_gelu (src/ops/bias_gelu/cuda), in ladder order.
#include "ops/bias_gelu/bias_gelu.h"
#include "ops/gpu_variants.h"

KL_DECLARE_GPU_RUNG(bias_gelu_v01_unfused)
KL_DECLARE_GPU_RUNG(bias_gelu_v02_fused)

namespace kl {

std::vector<Variant> bias_gelu_gpu_variants() {
  Variant unfused = gpu_variant("cuda_unfused",
                                "two kernels as two library calls would run them: x + bias written to a workspace in the dtype, then read back for gelu: twice the traffic, two launches",
                                KL_GPU_RUNG(bias_gelu_v01_unfused), "bias_gelu/cuda/v01_unfused.cu", {}, 256);
  unfused.workspace_bytes = [](const Problem& p) {
    return static_cast<size_t>(dtype_storage_bytes(p.dtype, p.dim("rows") * p.dim("cols")));
  };
  return {unfused, gpu_variant("cuda_fused",
                               "one kernel: x + bias stays in a register on its way through gelu, 16-byte vector loads and stores where rows allow: half the traffic, one launch",
                               KL_GPU_RUNG(bias_gelu_v02_fused), "bias_gelu/cuda/v02_fused.cu", {"ld.global.nc.v4", "st.global.v4"}, 256)};
}

}  // namespace kl
