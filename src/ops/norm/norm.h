// layernorm and rmsnorm over each row, with an optional fused residual add:
//   h = x + residual (written out when residual=1), y = norm(h) * gamma (+ beta for layernorm).
#pragma once
#include <vector>

#include "kernelab/op.h"

namespace kl {

enum class NormKind { layer, rms };

// The most columns the fused, vectorized CUDA rung (cuda_fused_vectorized) takes: a block of
// 1024 threads holds the row in registers, 16 values per thread.
inline constexpr int kNormFusedMaxCols = 16384;

std::vector<Variant> norm_cpu_variants(NormKind kind);
std::vector<Variant> norm_gpu_variants(NormKind kind);

}  // namespace kl
