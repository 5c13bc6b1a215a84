// bias_gelu: y = gelu(x + bias) with the exact (erf) GELU, bias broadcast along rows.
#pragma once
#include <vector>

#include "kernelab/op.h"

namespace kl {
std::vector<Variant> bias_gelu_cpu_variants();
std::vector<Variant> bias_gelu_gpu_variants();
}  // namespace kl
