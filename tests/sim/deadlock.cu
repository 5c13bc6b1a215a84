// A planted deadlock: threads past the end of the data return early, so the last block's
// other threads wait at a __syncthreads() those threads never reach. (On a GPU this is
// undefined behaviour that may hang or silently go wrong; the simulator reports it.)
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

__global__ void normalize(float* x, int n) {
  __shared__ float total;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;  // BUG: these threads skip the barriers below
  if (threadIdx.x == 0) total = 0.0f;
  __syncthreads();
  atomicAdd(&total, x[i]);
  __syncthreads();
  x[i] /= total;
}

int main() {
  const int n = 1000;
  float* x;
  cudaMalloc(&x, n * sizeof(float));
  cudaMemset(x, 0, n * sizeof(float));
  normalize<<<(n + 255) / 256, 256>>>(x, n);
  const cudaError_t e = cudaDeviceSynchronize();
  printf("normalize: %s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
