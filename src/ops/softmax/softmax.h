// softmax: y = softmax(scale * x) along each row, optionally with a causal mask.
#pragma once
#include <algorithm>
#include <vector>

#include "kernelab/op.h"

namespace kl {

// Columns a row keeps: all, or under the causal mask j <= i + (cols - rows) (the mask aligned
// to the bottom-right, as FlashAttention does for seq_q != seq_k). A row keeping none is zeros.
inline int64_t softmax_valid_cols(const Problem& p, int64_t row) {
  const int64_t rows = p.dim("rows"), cols = p.dim("cols");
  if (!p.opt_flag("causal")) return cols;
  return std::clamp<int64_t>(row + cols - rows + 1, 0, cols);
}

// The most columns the warp-per-row CUDA rung (cuda_warp_vectorized) takes: a warp holds the
// row in registers, 32 floats per lane.
inline constexpr int kSoftmaxWarpMaxCols = 1024;

std::vector<Variant> softmax_cpu_variants();
std::vector<Variant> softmax_gpu_variants();

}  // namespace kl
