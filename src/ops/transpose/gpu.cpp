// The CUDA rungs of transpose (src/ops/transpose/cuda), in ladder order.
#include "ops/gpu_variants.h"
#include "ops/transpose/transpose.h"

KL_DECLARE_GPU_RUNG(transpose_v01_naive)
KL_DECLARE_GPU_RUNG(transpose_v02_smem)

namespace kl {

std::vector<Variant> transpose_gpu_variants() {
  return {gpu_variant("cuda_naive", "one thread per element: reads along rows coalesced, writes down columns, 32 cache lines per warp store",
                      KL_GPU_RUNG(transpose_v01_naive), "transpose/cuda/v01_naive.cu"),
          gpu_variant("cuda_smem", "a 32x32 tile through shared memory: global reads and writes both coalesced, but the column read of the tile is a 32-way bank conflict",
                      KL_GPU_RUNG(transpose_v02_smem), "transpose/cuda/v02_smem.cu", {"bar.sync", "st.shared"})};
}

}  // namespace kl
