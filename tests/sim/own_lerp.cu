// A program's own lerp, with `using namespace std`, as CUDA samples and tutorials write it:
// fine in C++17 (nvcc's default), ambiguous with std::lerp in C++20. `sim run` compiles C++17
// unless -std= says otherwise.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>

using namespace std;

__host__ __device__ float lerp(float a, float b, float t) { return a + t * (b - a); }

__global__ void blend(float* out, const float* a, const float* b, float t, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = lerp(a[i], b[i], t);
}

int main() {
  const int n = 64;
  float ha[n], hb[n], hout[n];
  for (int i = 0; i < n; ++i) ha[i] = float(i), hb[i] = float(2 * i);
  float *a, *b, *out;
  cudaMalloc(&a, sizeof ha);
  cudaMalloc(&b, sizeof hb);
  cudaMalloc(&out, sizeof hout);
  cudaMemcpy(a, ha, sizeof ha, cudaMemcpyHostToDevice);
  cudaMemcpy(b, hb, sizeof hb, cudaMemcpyHostToDevice);
  blend<<<2, 32>>>(out, a, b, 0.25f, n);
  cudaMemcpy(hout, out, sizeof hout, cudaMemcpyDeviceToHost);
  int wrong = 0;
  for (int i = 0; i < n; ++i) wrong += fabs(hout[i] - lerp(ha[i], hb[i], 0.25f)) > 0;
  printf("own lerp: %d values wrong\n", wrong);
  return wrong == 0 ? 0 : 1;
}
