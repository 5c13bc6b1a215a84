// cuBLAS and cuBLASLt as programs call them: cublasSgemm (both transposes), a strided batch,
// cublasGemmEx on bf16 with fp32 accumulation, and cublasLtMatmul on row-major layouts with the
// bias and GELU+bias epilogues (its heuristic picks the algorithm). Checked against the host.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <vector>

#define CHECK_BLAS(call)                                                            \
  do {                                                                              \
    cublasStatus_t s = (call);                                                      \
    if (s != CUBLAS_STATUS_SUCCESS) {                                               \
      std::printf("cuBLAS error %d at line %d\n", int(s), __LINE__);                 \
      return 1;                                                                     \
    }                                                                               \
  } while (0)

// Column-major reference: C = A(m x k) B(k x n), A transposed when ta (stored k x m).
std::vector<float> ref(const std::vector<float>& a, const std::vector<float>& b, int m, int n, int k, bool ta, bool tb) {
  std::vector<float> c(m * n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      double s = 0;
      for (int l = 0; l < k; ++l) s += double(ta ? a[l + i * k] : a[i + l * m]) * double(tb ? b[j + l * n] : b[l + j * k]);
      c[i + j * m] = float(s);
    }
  return c;
}

int count_wrong(const std::vector<float>& got, const std::vector<float>& want, float tol) {
  int wrong = 0;
  for (size_t i = 0; i < got.size(); ++i) wrong += std::fabs(got[i] - want[i]) > tol * (1.0f + std::fabs(want[i]));
  return wrong;
}

float* device(const std::vector<float>& h) {
  float* d;
  cudaMalloc(&d, h.size() * sizeof(float));
  cudaMemcpy(d, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice);
  return d;
}
std::vector<float> host(const float* d, size_t n) {
  std::vector<float> h(n);
  cudaMemcpy(h.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost);
  return h;
}

int main() {
  const int m = 37, n = 19, k = 53;
  std::vector<float> a(m * k), b(k * n);
  for (int i = 0; i < m * k; ++i) a[i] = float((i * 7) % 13) / 13.0f - 0.5f;
  for (int i = 0; i < k * n; ++i) b[i] = float((i * 5) % 11) / 11.0f - 0.5f;
  float *da = device(a), *db = device(b), *dc;
  cudaMalloc(&dc, 2 * m * n * sizeof(float));
  cublasHandle_t h;
  CHECK_BLAS(cublasCreate(&h));
  CHECK_BLAS(cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH));
  const float one = 1.0f, zero = 0.0f;
  int wrong = 0;

  CHECK_BLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, da, m, db, k, &zero, dc, m));
  wrong += count_wrong(host(dc, m * n), ref(a, b, m, n, k, false, false), 1e-5f);
  CHECK_BLAS(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_T, m, n, k, &one, da, k, db, n, &zero, dc, m));  // A as k x m, B as n x k
  wrong += count_wrong(host(dc, m * n), ref(a, b, m, n, k, true, true), 1e-5f);
  // Two batches: the second multiplies the same A by the same B.
  CHECK_BLAS(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, da, m, 0, db, k, 0, &zero, dc, m, m * n, 2));
  const std::vector<float> c2 = host(dc, 2 * m * n), want = ref(a, b, m, n, k, false, false);
  wrong += count_wrong(std::vector<float>(c2.begin(), c2.begin() + m * n), want, 1e-5f);
  wrong += count_wrong(std::vector<float>(c2.begin() + m * n, c2.end()), want, 1e-5f);

  // bf16 inputs, fp32 output and accumulation.
  std::vector<__nv_bfloat16> ab(a.size()), bb(b.size());
  std::vector<float> ar(a.size()), br(b.size());
  for (size_t i = 0; i < a.size(); ++i) ab[i] = __float2bfloat16(a[i]), ar[i] = __bfloat162float(ab[i]);
  for (size_t i = 0; i < b.size(); ++i) bb[i] = __float2bfloat16(b[i]), br[i] = __bfloat162float(bb[i]);
  __nv_bfloat16 *dab, *dbb;
  cudaMalloc(&dab, ab.size() * 2);
  cudaMalloc(&dbb, bb.size() * 2);
  cudaMemcpy(dab, ab.data(), ab.size() * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(dbb, bb.data(), bb.size() * 2, cudaMemcpyHostToDevice);
  CHECK_BLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, dab, CUDA_R_16BF, m, dbb, CUDA_R_16BF, k, &zero, dc,
                          CUDA_R_32F, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  wrong += count_wrong(host(dc, m * n), ref(ar, br, m, n, k, false, false), 1e-5f);

  // cuBLASLt, row-major: D (m x n) = A (m x k) B (k x n) + bias (per row of D), then GELU.
  std::vector<float> bias(m);
  for (int i = 0; i < m; ++i) bias[i] = 0.1f * float(i % 5) - 0.2f;
  float* dbias = device(bias);
  cublasLtHandle_t lt;
  CHECK_BLAS(cublasLtCreate(&lt));
  cublasLtMatmulDesc_t desc;
  CHECK_BLAS(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasLtMatrixLayout_t la, lb, ld;
  CHECK_BLAS(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, m, k, k));
  CHECK_BLAS(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, k, n, n));
  CHECK_BLAS(cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, m, n, n));
  const cublasLtOrder_t row = CUBLASLT_ORDER_ROW;
  for (cublasLtMatrixLayout_t l : {la, lb, ld}) CHECK_BLAS(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ORDER, &row, sizeof row));
  cublasLtMatmulPreference_t pref;
  CHECK_BLAS(cublasLtMatmulPreferenceCreate(&pref));
  const size_t workspace = 1 << 20;
  CHECK_BLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace));
  // a, b hold column-major m x k and k x n; read row-major, the same bytes are their transposes' (k x m stored rows).
  std::vector<float> arow(m * k), brow(k * n);
  for (int i = 0; i < m; ++i)
    for (int l = 0; l < k; ++l) arow[i * k + l] = a[i + l * m];
  for (int l = 0; l < k; ++l)
    for (int j = 0; j < n; ++j) brow[l * n + j] = b[l + j * k];
  float *dar = device(arow), *dbr = device(brow);
  const std::vector<float> plain = ref(a, b, m, n, k, false, false);  // column-major m x n
  for (cublasLtEpilogue_t epi : {CUBLASLT_EPILOGUE_BIAS, CUBLASLT_EPILOGUE_GELU_BIAS}) {
    CHECK_BLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    CHECK_BLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &dbias, sizeof dbias));
    cublasLtMatmulHeuristicResult_t result;
    int found = 0;
    CHECK_BLAS(cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, ld, ld, pref, 1, &result, &found));
    if (found != 1) return std::printf("no algorithm\n"), 1;
    CHECK_BLAS(cublasLtMatmul(lt, desc, &one, dar, la, dbr, lb, &zero, dc, ld, dc, ld, &result.algo, nullptr, 0, 0));
    const std::vector<float> d = host(dc, m * n);
    std::vector<float> want_row(m * n);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        const double x = double(plain[i + j * m]) + bias[i];
        want_row[i * n + j] = float(epi == CUBLASLT_EPILOGUE_BIAS ? x : 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))));
      }
    wrong += count_wrong(d, want_row, 1e-5f);
  }
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(la), cublasLtMatrixLayoutDestroy(lb), cublasLtMatrixLayoutDestroy(ld);
  cublasLtMatmulDescDestroy(desc);
  cublasLtDestroy(lt);
  cublasDestroy(h);
  std::printf("cublas matmul: %d values wrong\n", wrong);
  return wrong == 0 ? 0 : 1;
}
