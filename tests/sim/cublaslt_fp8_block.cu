// cuBLASLt's fp8 GEMM with block scales, as the gemm_fp8 peer's three formulations call it: D = A W^T
// for e4m3 activations A [m][k] (1x128 scales) and weights W [n][k] (128x128 scales), the scales in
// the layouts PyTorch's ScaledBlas.cpp checks (A's [k/128][m], m fastest; W's rows padded to 4
// floats). F1: A as cuBLAS's A (VEC128_32F), W as B (BLK128x128_32F), D row-major; F2: the same, D
// column-major; F3: W as A, A as B. Each prints its wrong values, or that the heuristic found none.
// The same source runs on a GPU (nvcc ... -lcublasLt): which formulations the library takes.
// Arguments: m n k (k a multiple of 128); 64 256 384 by default.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK_BLAS(call)                                                \
  do {                                                                  \
    cublasStatus_t s = (call);                                          \
    if (s != CUBLAS_STATUS_SUCCESS) {                                   \
      std::printf("cuBLAS error %d at line %d\n", int(s), __LINE__);     \
      return 1;                                                         \
    }                                                                   \
  } while (0)

template <class T> T* device(const std::vector<T>& h) {
  T* d;
  cudaMalloc(&d, h.size() * sizeof(T));
  cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice);
  return d;
}

int main(int argc, char** argv) {
  const int m = argc > 3 ? std::atoi(argv[1]) : 64, n = argc > 3 ? std::atoi(argv[2]) : 256, k = argc > 3 ? std::atoi(argv[3]) : 384;
  const int kb = k / 128, kb_padded = (kb + 3) / 4 * 4, nb = (n + 127) / 128, ld_col = (m + 7) / 8 * 8;  // F2's ld: 16-byte columns
  std::vector<__nv_fp8_e4m3> a(m * k), w(n * k);  // multiples of 1/4 up to 1.5: exact in e4m3
  for (int i = 0; i < m * k; ++i) a[i] = __nv_fp8_e4m3(float((i * 7) % 13 - 6) / 4);
  for (int i = 0; i < n * k; ++i) w[i] = __nv_fp8_e4m3(float((i * 5) % 11 - 5) / 4);
  std::vector<float> sa(kb * m), sw(nb * kb_padded, 0.0f);  // sa [kb][m]; sw [nb][kb_padded]
  for (int i = 0; i < m; ++i)
    for (int b = 0; b < kb; ++b) sa[b * m + i] = 0.5f + 0.25f * float((i + 3 * b) % 5);
  for (int j = 0; j < nb; ++j)
    for (int b = 0; b < kb; ++b) sw[j * kb_padded + b] = 1.0f + 0.5f * float((2 * j + b) % 3);
  std::vector<double> want(m * n);  // row-major [m][n]
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int l = 0; l < k; ++l)
        s += double(float(a[i * k + l])) * sa[l / 128 * m + i] * double(float(w[j * k + l])) * sw[j / 128 * kb_padded + l / 128];
      want[i * n + j] = s;
    }
  __nv_fp8_e4m3 *da = device(a), *dw = device(w);
  float *dsa = device(sa), *dsw = device(sw);
  __nv_bfloat16* dd;
  cudaMalloc(&dd, size_t(ld_col) * n * sizeof(__nv_bfloat16));
  const size_t workspace_bytes = size_t{32} << 20;
  void* workspace;
  cudaMalloc(&workspace, workspace_bytes);
  cublasLtHandle_t lt;
  CHECK_BLAS(cublasLtCreate(&lt));

  const char* names[] = {"F1 activations as A, D row-major", "F2 activations as A, D column-major", "F3 weights as A"};
  for (int f = 0; f < 3; ++f) {
    const bool weights_a = f == 2, row_d = f == 0;
    cublasLtMatmulDesc_t desc;
    CHECK_BLAS(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t t = CUBLAS_OP_T, nn = CUBLAS_OP_N;
    CHECK_BLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t));
    CHECK_BLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &nn, sizeof nn));
    const int32_t vec = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F, blk = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
    const int32_t a_mode = weights_a ? blk : vec, b_mode = weights_a ? vec : blk;
    CHECK_BLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &a_mode, sizeof a_mode));
    CHECK_BLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &b_mode, sizeof b_mode));
    const void *a_scale = weights_a ? dsw : dsa, *b_scale = weights_a ? dsa : dsw;
    CHECK_BLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &a_scale, sizeof a_scale));
    CHECK_BLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &b_scale, sizeof b_scale));
    cublasLtMatrixLayout_t la, lb, ld;
    CHECK_BLAS(cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, k, weights_a ? n : m, k));
    CHECK_BLAS(cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, k, weights_a ? m : n, k));
    if (weights_a) CHECK_BLAS(cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, n, m, n));
    else CHECK_BLAS(cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, m, n, row_d ? n : ld_col));
    if (row_d) {
      const cublasLtOrder_t row = CUBLASLT_ORDER_ROW;
      CHECK_BLAS(cublasLtMatrixLayoutSetAttribute(ld, CUBLASLT_MATRIX_LAYOUT_ORDER, &row, sizeof row));
    }
    cublasLtMatmulPreference_t pref;
    CHECK_BLAS(cublasLtMatmulPreferenceCreate(&pref));
    CHECK_BLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                                    sizeof workspace_bytes));
    cublasLtMatmulHeuristicResult_t result = {};
    int found = 0;
    const cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, ld, ld, pref, 1, &result, &found);
    if (s != CUBLAS_STATUS_SUCCESS || found == 0) {
      std::printf("%s: no algorithm (status %d)\n", names[f], int(s));
    } else {
      const float alpha = 1, beta = 0;
      cudaMemset(dd, 0, size_t(ld_col) * n * sizeof(__nv_bfloat16));
      CHECK_BLAS(cublasLtMatmul(lt, desc, &alpha, weights_a ? (const void*)dw : da, la, weights_a ? (const void*)da : dw, lb,
                                &beta, dd, ld, dd, ld, &result.algo, workspace, workspace_bytes, nullptr));
      std::vector<__nv_bfloat16> got(size_t(ld_col) * n);
      cudaMemcpy(got.data(), dd, got.size() * sizeof(__nv_bfloat16), cudaMemcpyDeviceToHost);
      int wrong = 0;
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
          const double g = double(__bfloat162float(got[f == 1 ? j * ld_col + i : i * n + j])), x = want[i * n + j];
          wrong += std::fabs(g - x) > 1e-2 * (1.0 + std::fabs(x));
        }
      std::printf("%s: %d of %d values wrong\n", names[f], wrong, m * n);
    }
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la), cublasLtMatrixLayoutDestroy(lb), cublasLtMatrixLayoutDestroy(ld);
    cublasLtMatmulDescDestroy(desc);
  }
  cublasLtDestroy(lt);
  return 0;
}
