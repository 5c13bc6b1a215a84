// bias_gelu: y = gelu(x + bias) with the exact (erf) GELU, bias broadcast along rows.
#pragma once
#include <cstdint>
#include <vector>

#include "kernelab/op.h"
#include "ops/cpu_isa.h"

namespace kl {

// What every bias_gelu rung receives, parsed once from the problem.
struct BiasGeluParams {
  int64_t rows = 0, cols = 0;  // x and y are (rows, cols), bias (cols)
  DType x = DType::f32, bias = DType::f32, y = DType::f32;  // the tensors' dtypes

  int64_t n() const { return rows * cols; }  // elements of x and y
};

KL_CPU_ISA_DECLARE(std::vector<Variant> bias_gelu_cpu_variants())

}  // namespace kl
