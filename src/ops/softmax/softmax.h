// softmax: y = softmax(scale * x) along each row, optionally with a causal mask.
#pragma once
#include <algorithm>
#include <vector>

#include "kernelab/op.h"
#include "ops/cpu_isa.h"

namespace kl {

// What every softmax rung receives, parsed once from the problem.
struct SoftmaxParams {
  int64_t rows = 0, cols = 0;
  double scale = 1;
  bool causal = false;
  DType x = DType::f32, y = DType::f32;  // the tensors' dtypes

  // Columns a row keeps: all, or under the causal mask j <= i + (cols - rows) (the mask aligned
  // to the bottom-right, as FlashAttention does for seq_q != seq_k). A row keeping none is zeros.
  int64_t valid_cols(int64_t row) const {
    if (!causal) return cols;
    return std::clamp<int64_t>(row + cols - rows + 1, 0, cols);
  }
};

// The most columns the warp-per-row CUDA rung (cuda_warp_vectorized) takes: a warp holds the
// row in registers, 32 floats per lane.
inline constexpr int kSoftmaxWarpMaxCols = 1024;

KL_CPU_ISA_DECLARE(std::vector<Variant> softmax_cpu_variants())

}  // namespace kl
