// transpose: y (cols, rows) = x (rows, cols)^T. No arithmetic: the whole lesson is moving bytes.
#pragma once
#include <cstdint>
#include <vector>

#include "kernelab/op.h"
#include "ops/cpu_isa.h"

namespace kl {

// What every transpose rung receives, parsed once from the problem.
struct TransposeParams {
  int64_t rows = 0, cols = 0;            // of x; y is (cols, rows)
  DType x = DType::f32, y = DType::f32;  // the tensors' dtypes (a transpose moves raw elements: the same)
};

KL_CPU_ISA_DECLARE(std::vector<Variant> transpose_cpu_variants())

}  // namespace kl
