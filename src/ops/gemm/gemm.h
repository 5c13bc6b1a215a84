// gemm: D = act(alpha * A B + beta * C + bias) + R, A (m,k), B (k,n), C, R and D (m,n) row-major,
// bias (n) along rows. A and B are each row- or column-major; fp16/bf16 inputs accumulate in fp32
// and round once into D. The epilogue (bias, activation, residual) is optional: --epilogue, --residual.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernelab/op.h"
#include "ops/cpu_isa.h"

namespace kl {

// Strides (elements) of a (rows, cols) matrix stored row- or column-major.
inline std::vector<int64_t> matrix_strides(int64_t rows, int64_t cols, const std::string& layout) {
  return layout == "col" ? std::vector<int64_t>{1, rows} : std::vector<int64_t>{cols, 1};
}

// What the epilogue applies to alpha*A*B + beta*C before D is written (the residual is added after it).
enum class GemmEpilogue { none, bias, bias_gelu, bias_silu };

// gelu(t) = t/2 (1 + erf(t / sqrt 2)) as the bias_gelu op defines it; silu(t) = t / (1 + e^-t).
template <class F> inline F apply_activation(GemmEpilogue e, F t) {
  using std::erfc, std::exp;
  if (e == GemmEpilogue::bias_gelu) return F(0.5) * t * erfc(-t * F(0.70710678118654752440));
  if (e == GemmEpilogue::bias_silu) return t / (F(1) + exp(-t));
  return t;
}

// What every gemm rung receives, parsed once from the problem.
struct GemmParams {
  int64_t m = 0, n = 0, k = 0;
  double alpha = 1, beta = 0;
  bool a_col = false, b_col = false;  // a_layout=col, b_layout=col: A or B stored column-major
  DType a = DType::f32, b = DType::f32, c = DType::f32, d = DType::f32;  // the tensors' dtypes (A, B, C, D)
  GemmEpilogue epilogue = GemmEpilogue::none;  // a bias (in[3], n elements) unless none
  bool residual = false;                        // R (m x n) added last: in[3], or in[4] after a bias
  bool plain() const { return epilogue == GemmEpilogue::none && !residual; }
};

KL_CPU_ISA_DECLARE(std::vector<Variant> gemm_cpu_variants())

}  // namespace kl
