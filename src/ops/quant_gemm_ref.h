// The float64 references and dtype baselines of the 8-bit GEMM ops (gemm_w8a8, gemm_fp8) by
// OpenBLAS, so that the device check's 8192^3 problems get theirs in seconds: D = X W^T with X
// (m x k) and W (n x k) row-major.
#pragma once
#include <cblas.h>

#include <cstdint>
#include <vector>

#include "kernelab/dtype.h"

namespace kl::quant_gemm {

inline std::vector<double> abt(int64_t m, int64_t n, int64_t k, const std::vector<double>& x, const std::vector<double>& w) {
  std::vector<double> d(size_t(m * n));
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(m), int(n), int(k), 1.0, x.data(), int(k), w.data(), int(k), 0.0,
              d.data(), int(n));
  return d;
}

// In fp32 (sgemm) over columns [l0, l0 + span) of X and W: 8-bit values' products are exact in fp32, sums round there.
inline std::vector<float> abt_f32(int64_t m, int64_t n, int64_t k, const std::vector<float>& x, const std::vector<float>& w,
                                  int64_t l0, int64_t span) {
  std::vector<float> d(size_t(m * n));
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(m), int(n), int(span), 1.0f, x.data() + l0, int(k), w.data() + l0,
              int(k), 0.0f, d.data(), int(n));
  return d;
}

inline double round_to(DType t, double x) { return t == DType::bf16 ? bf16_to_float(double_to_bf16(x)) : f16_to_float(double_to_f16(x)); }

}  // namespace kl::quant_gemm
