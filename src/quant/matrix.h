// A dense row-major matrix of doubles: the weights (N output rows x K input columns) and the
// activations (M tokens x K) that the quantizers and `quant eval` work on.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace kl::quant {

struct Matrix {
  int64_t rows = 0, cols = 0;
  std::vector<double> v;  // rows * cols, row-major

  Matrix() = default;
  Matrix(int64_t r, int64_t c) : rows(r), cols(c), v(static_cast<size_t>(r * c), 0.0) {}
  double& at(int64_t r, int64_t c) { return v[static_cast<size_t>(r * cols + c)]; }
  double at(int64_t r, int64_t c) const { return v[static_cast<size_t>(r * cols + c)]; }
};

// C = X * W^T (M x N) for X (M x K) and W (N x K), accumulated in double (OpenBLAS dgemm).
Matrix matmul_nt(const Matrix& x, const Matrix& w);

}  // namespace kl::quant
