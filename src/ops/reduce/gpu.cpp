// The CUDA rungs of reduce (src/ops/reduce/cuda), in ladder order.
#include "ops/gpu_variants.h"
#include "ops/reduce/reduce.h"

KL_DECLARE_GPU_RUNG(reduce_v01_atomic)
KL_DECLARE_GPU_RUNG(reduce_v02_smem_tree)
KL_DECLARE_GPU_RUNG(reduce_v03_warp_shuffle)
KL_DECLARE_GPU_RUNG(reduce_v04_vectorized)
KL_DECLARE_GPU_RUNG(reduce_v05_one_pass)

namespace kl {

namespace {
// over=total: one fp32 partial per block of the first pass.
Variant with_partials(Variant v) {
  v.workspace_bytes = [](const Problem& p) {
    return p.opt("over") == "total" ? static_cast<size_t>(kReduceMaxPartials) * sizeof(float) : size_t{0};
  };
  return v;
}
}  // namespace

std::vector<Variant> reduce_gpu_variants() {
  return {gpu_variant("cuda_atomic", "one thread per element, each an atomic into the output (float max by the int-ordering trick): every thread of a row contends for one address",
                      KL_GPU_RUNG(reduce_v01_atomic), "reduce/cuda/v01_atomic.cu", {"atom.global.add.f32", "atom.global.max.s32", "atom.global.min.u32"}, 256),
          with_partials(gpu_variant("cuda_smem_tree", "a block folds in a shared-memory tree and writes once: one global write per block instead of an atomic per element; over=total in two launches",
                                    KL_GPU_RUNG(reduce_v02_smem_tree), "reduce/cuda/v02_smem_tree.cu", {"bar.sync", "st.shared.f32"}, 256)),
          with_partials(gpu_variant("cuda_warp_shuffle", "warps fold in registers with shuffles, one shared slot per warp: 1 barrier a block instead of 9, and a warp per row for rows up to 1024",
                                    KL_GPU_RUNG(reduce_v03_warp_shuffle), "reduce/cuda/v03_warp_shuffle.cu", {"shfl.sync.down"}, 256)),
          with_partials(gpu_variant("cuda_vectorized", "16-byte loads, four in flight per thread, over a grid sized for several vectors a thread: 4-8x fewer load instructions",
                                    KL_GPU_RUNG(reduce_v04_vectorized), "reduce/cuda/v04_vectorized.cu", {"ld.global.nc.v4", "shfl.sync.down"}, 256)),
          with_partials(gpu_variant("cuda_one_pass", "over=total in one launch: blocks publish partials (threadfence) and count themselves on an atomic; the last block folds them",
                                    KL_GPU_RUNG(reduce_v05_one_pass), "reduce/cuda/v05_one_pass.cu", {"ld.global.nc.v4", "membar.gl", "atom.global.inc"}, 256))};
}

}  // namespace kl
