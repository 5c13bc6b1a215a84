// A cuBLAS call the simulator does not compute (a double-precision GEMM) answers
// CUBLAS_STATUS_NOT_SUPPORTED, says its name once, and leaves the program running; the calls
// around it (pointer mode, version, Sgemm with alpha and beta read through device pointers) work.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdio>

int main() {
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 2;
  int version = 0;
  cublasGetVersion(h, &version);
  const int n = 3;
  double *dA, *dC;
  cudaMalloc(&dA, n * n * sizeof(double));
  cudaMalloc(&dC, n * n * sizeof(double));
  const double one = 1.0, zero = 0.0;
  const cublasStatus_t first = cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, dA, n, dA, n, &zero, dC, n);
  const cublasStatus_t second = cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, dA, n, dA, n, &zero, dC, n);
  std::printf("cublasDgemm: %d and %d (CUBLAS_STATUS_NOT_SUPPORTED is %d)\n", int(first), int(second),
              int(CUBLAS_STATUS_NOT_SUPPORTED));

  // C = 2 * A B + 1 * C with the scalars on the device (pointer mode device).
  float hA[n * n], hB[n * n], hC[n * n], scalars[2] = {2.0f, 1.0f};
  for (int i = 0; i < n * n; ++i) hA[i] = float(i + 1), hB[i] = float(2 * i - 3), hC[i] = 0.5f * float(i);
  float *a, *b, *c, *s;
  cudaMalloc(&a, sizeof hA), cudaMalloc(&b, sizeof hB), cudaMalloc(&c, sizeof hC), cudaMalloc(&s, sizeof scalars);
  cudaMemcpy(a, hA, sizeof hA, cudaMemcpyHostToDevice);
  cudaMemcpy(b, hB, sizeof hB, cudaMemcpyHostToDevice);
  cudaMemcpy(c, hC, sizeof hC, cudaMemcpyHostToDevice);
  cudaMemcpy(s, scalars, sizeof scalars, cudaMemcpyHostToDevice);
  cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE);
  cublasPointerMode_t mode;
  cublasGetPointerMode(h, &mode);
  const cublasStatus_t sgemm = cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, s, a, n, b, n, s + 1, c, n);
  float got[n * n];
  cudaMemcpy(got, c, sizeof got, cudaMemcpyDeviceToHost);
  int wrong = 0;
  for (int i = 0; i < n; ++i)      // column-major: (i, j) at i + j n
    for (int j = 0; j < n; ++j) {
      float want = hC[i + j * n];
      for (int k = 0; k < n; ++k) want += 2.0f * hA[i + k * n] * hB[k + j * n];
      wrong += got[i + j * n] != want;
    }
  std::printf("version %s, pointer mode %s, cublasSgemm status %d, %d of %d wrong\n", version > 0 ? "known" : "unknown",
              mode == CUBLAS_POINTER_MODE_DEVICE ? "device" : "host", int(sgemm), wrong, n * n);
  cublasDestroy(h);
  return first == CUBLAS_STATUS_NOT_SUPPORTED && sgemm == CUBLAS_STATUS_SUCCESS && wrong == 0 ? 0 : 1;
}
