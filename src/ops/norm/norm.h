// layernorm and rmsnorm over each row, with an optional fused residual add:
//   h = x + residual (written out when residual=1), y = norm(h) * gamma (+ beta for layernorm).
#pragma once
#include <cstdint>
#include <vector>

#include "kernelab/op.h"
#include "ops/cpu_isa.h"

namespace kl {

enum class NormKind { layer, rms };

// What every layernorm and rmsnorm rung receives, parsed once from the problem.
struct NormParams {
  bool layer = true;  // layernorm (centre on the mean, add beta); else rmsnorm
  int64_t rows = 0, cols = 0;
  double eps = 1e-5;      // added to the variance (layernorm) or to mean(h^2) (rmsnorm)
  bool residual = false;  // h = x + residual is normalised and written as a second output
  // The tensors' dtypes: inputs x, gamma, beta (layernorm only), residual (residual only);
  // outputs y, h (residual only).
  DType x = DType::f32, gamma = DType::f32, beta = DType::f32, res = DType::f32, y = DType::f32, h = DType::f32;
};

// The most columns the fused, vectorized CUDA rung (cuda_fused_vectorized) takes: a block of
// 1024 threads holds the row in registers, 16 values per thread.
inline constexpr int kNormFusedMaxCols = 16384;

KL_CPU_ISA_DECLARE(std::vector<Variant> norm_cpu_variants(NormKind kind))

}  // namespace kl
