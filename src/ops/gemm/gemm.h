// gemm: D = alpha * A B + beta * C, A (m,k), B (k,n), C and D (m,n) row-major. A and B are each
// row- or column-major; fp16/bf16 inputs accumulate in fp32 and round once into D.
#pragma once
#include <vector>

#include "kernelab/op.h"

namespace kl {

// Strides (elements) of a (rows, cols) matrix stored row- or column-major.
inline std::vector<int64_t> matrix_strides(int64_t rows, int64_t cols, const std::string& layout) {
  return layout == "col" ? std::vector<int64_t>{1, rows} : std::vector<int64_t>{cols, 1};
}

std::vector<Variant> gemm_cpu_variants();

}  // namespace kl
