// The host half of a program in two files, as the CUDA samples split them: a .cpp main that
// calls a launcher defined in two_files_kernels.cu. `kernelab sim run two_files_main.cc two_files_kernels.cu`.
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

cudaError_t scale_on_gpu(float* x, float by, int n);

int main() {
  const int n = 1000;
  std::vector<float> h(n);
  for (int i = 0; i < n; ++i) h[i] = float(i) - 300.5f;
  float* d;
  cudaMalloc(&d, n * sizeof(float));
  cudaMemcpy(d, h.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  const cudaError_t e = scale_on_gpu(d, 3.0f, n);
  std::vector<float> r(n);
  cudaMemcpy(r.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost);
  int wrong = 0;
  for (int i = 0; i < n; ++i) wrong += r[i] != 3.0f * h[i];
  std::printf("two files: %d of %d wrong (%s)\n", wrong, n, cudaGetErrorString(e));
  return wrong == 0 && e == cudaSuccess ? 0 : 1;
}
