// The transpose op's CPU rungs, declared for its op definition.
#pragma once
#include <vector>

#include "kernelab/op.h"

namespace kl {
std::vector<Variant> transpose_cpu_variants();
std::vector<Variant> transpose_gpu_variants();
}  // namespace kl
