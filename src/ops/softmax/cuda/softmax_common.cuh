// What the softmax rungs share: the problem's scalars as a kernel sees them, the causal mask,
// and the exponential. All rungs compute y_j = 2^(t_j - max t) / sum 2^(t - max t) with
// t = x * scale * log2(e): the same softmax, one multiply per element, and exp2f is one
// MUFU.EX2 instruction on the GPU (accurate to 2 ulp) where expf needs a range reduction.
#pragma once
#include "ops/gpu_rowwise.h"
#include "ops/softmax/softmax.h"

namespace kl::KL_TARGET::softmax {

using namespace rowwise;

struct Shape {
  int rows, cols;
  float c;     // scale * log2(e)
  int causal;  // 1: row i keeps columns j <= i + cols - rows
};

inline Shape shape_of(const SoftmaxParams& p) {
  return {static_cast<int>(p.rows), static_cast<int>(p.cols), static_cast<float>(p.scale * 1.4426950408889634), p.causal ? 1 : 0};
}

// Columns row `row` keeps (softmax_valid_cols on the device); 0: the row is all zeros.
__device__ __forceinline__ int valid_cols(const Shape& s, int row) {
  if (!s.causal) return s.cols;
  const int64_t v = static_cast<int64_t>(row) + s.cols - s.rows + 1;
  return v < 0 ? 0 : v > s.cols ? s.cols : static_cast<int>(v);
}

// 1/sum, or 0 for a fully masked row (sum 0): its y is zeros, never NaN.
__device__ __forceinline__ float inv_or_zero(float sum) { return sum > 0.0f ? 1.0f / sum : 0.0f; }

}  // namespace kl::KL_TARGET::softmax
