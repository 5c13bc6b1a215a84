// layernorm and rmsnorm over each row, with an optional fused residual add:
//   h = x + residual (written out when residual=1), y = norm(h) * gamma (+ beta for layernorm).
#pragma once
#include <vector>

#include "kernelab/op.h"

namespace kl {

enum class NormKind { layer, rms };

std::vector<Variant> norm_cpu_variants(NormKind kind);

}  // namespace kl
