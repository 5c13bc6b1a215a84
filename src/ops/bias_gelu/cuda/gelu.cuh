// The exact GELU both bias_gelu rungs apply: gelu(t) = t/2 * erfc(-t / sqrt 2), which equals
// t/2 * (1 + erf(t / sqrt 2)) without its cancellation for t << 0 (1 + erf loses ~1e-5 relative at t = -3).
#pragma once
#include "ops/bias_gelu/bias_gelu.h"
#include "ops/gpu_rowwise.h"

namespace kl::KL_TARGET::bias_gelu {
using namespace rowwise;
__device__ __forceinline__ float gelu(float t) { return 0.5f * t * erfcf(-t * 0.70710678118654752f); }
}  // namespace kl::KL_TARGET::bias_gelu
