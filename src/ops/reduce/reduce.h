// The reduce op's CPU and CUDA rungs, declared for its op definition.
#pragma once
#include <cstdint>
#include <vector>

#include "kernelab/op.h"

namespace kl {
std::vector<Variant> reduce_cpu_variants();
std::vector<Variant> reduce_gpu_variants();

// CUDA rungs over=total: at most this many blocks in the first pass, one fp32 partial each in
// the workspace.
inline constexpr int64_t kReduceMaxPartials = 1024;
}  // namespace kl
