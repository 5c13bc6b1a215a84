// gemm: D = alpha * A B + beta * C, A (m,k), B (k,n), C and D (m,n) row-major. A and B are each
// row- or column-major; fp16/bf16 inputs accumulate in fp32 and round once into D.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernelab/op.h"

namespace kl {

// Strides (elements) of a (rows, cols) matrix stored row- or column-major.
inline std::vector<int64_t> matrix_strides(int64_t rows, int64_t cols, const std::string& layout) {
  return layout == "col" ? std::vector<int64_t>{1, rows} : std::vector<int64_t>{cols, 1};
}

// What every gemm rung receives, parsed once from the problem.
struct GemmParams {
  int64_t m = 0, n = 0, k = 0;
  double alpha = 1, beta = 0;
  bool a_col = false, b_col = false;  // a_layout=col, b_layout=col: A or B stored column-major
  DType a = DType::f32, b = DType::f32, c = DType::f32, d = DType::f32;  // the tensors' dtypes (A, B, C, D)
};

std::vector<Variant> gemm_cpu_variants();

}  // namespace kl
