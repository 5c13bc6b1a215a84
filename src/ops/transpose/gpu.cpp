// The CUDA rungs of transpose (src/ops/transpose/cuda), in ladder order.
#include "ops/gpu_variants.h"
#include "ops/transpose/transpose.h"

KL_DECLARE_GPU_RUNG(transpose_v01_naive)
KL_DECLARE_GPU_RUNG(transpose_v02_smem)
KL_DECLARE_GPU_RUNG(transpose_v03_padded)
KL_DECLARE_GPU_RUNG(transpose_v04_swizzled)
KL_DECLARE_GPU_RUNG(transpose_v05_vectorized)

namespace kl {

std::vector<Variant> transpose_gpu_variants() {
  return {gpu_variant("cuda_naive", "one thread per element: reads along rows coalesced, writes down columns, 32 cache lines per warp store",
                      KL_GPU_RUNG(transpose_v01_naive), "transpose/cuda/v01_naive.cu", {}, 256),
          gpu_variant("cuda_smem", "a 32x32 tile through shared memory: global reads and writes both coalesced, but the column read of the tile is a 32-way bank conflict",
                      KL_GPU_RUNG(transpose_v02_smem), "transpose/cuda/v02_smem.cu", {"bar.sync", "st.shared"}, 256),
          gpu_variant("cuda_padded", "the tile padded to 32x33 words: a tile column spans 32 banks, so the column read is conflict-free (4-byte elements)",
                      KL_GPU_RUNG(transpose_v03_padded), "transpose/cuda/v03_padded.cu", {"bar.sync", "st.shared", "ld.shared"}, 256),
          gpu_variant("cuda_swizzled", "column c of tile row r stored at c ^ r instead of padding: conflict-free like the padded tile, with no wasted shared memory",
                      KL_GPU_RUNG(transpose_v04_swizzled), "transpose/cuda/v04_swizzled.cu", {"bar.sync", "st.shared", "ld.shared"}, 256),
          gpu_variant("cuda_vectorized", "16-byte global loads and stores (4 fp32 or 8 16-bit elements), micro-tiles transposed in registers, swizzled 16-byte shared accesses: 4-8x fewer memory instructions",
                      KL_GPU_RUNG(transpose_v05_vectorized), "transpose/cuda/v05_vectorized.cu",
                      {"ld.global.nc.v4", "st.global.v4", "st.shared.v4", "ld.shared.v4"}, 256)};
}

}  // namespace kl
