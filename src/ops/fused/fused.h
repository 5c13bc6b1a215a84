// fused: the output(s) of an expression of the fusion language (src/jit/expr.h) over rows x cols
// inputs: `--expr NAME` (src/jit/presets.h) or the expression itself, with `--vector` naming the
// row vectors. Its rungs are the CPU interpreter and the two schedules generated from the
// expression, compiled at run time: NVRTC and the driver API on a GPU, the host compiler against
// the simulator's header in the simulator.
#pragma once
#include <vector>

#include "jit/codegen.h"
#include "jit/expr.h"
#include "kernelab/op.h"

namespace kl {

struct FusedParams {
  jit::Program program;
  jit::FuseDType dtype = jit::FuseDType::fp32;
  int64_t rows = 0, cols = 0;
};

std::vector<Variant> fused_cpu_variants();   // interpreter.cpp
std::vector<Variant> fused_cuda_variants();  // generated.cpp

}  // namespace kl
