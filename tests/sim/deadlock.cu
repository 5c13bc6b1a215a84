// A planted deadlock: the first warp waits at one __syncthreads() and the others at another,
// the block's reduction split by a branch that does not evaluate the same across the block.
// (CUDA: "__syncthreads() is allowed in conditional code but only if the conditional evaluates
// identically across the entire thread block, otherwise the code execution is likely to hang".)
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

__global__ void normalize(float* x, int n) {
  __shared__ float total;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (threadIdx.x == 0) total = 0.0f;
  if (threadIdx.x < 32) {
    __syncthreads();
  } else {
    __syncthreads();  // BUG: a different barrier than the first warp's
  }
  if (i < n) atomicAdd(&total, x[i]);
  __syncthreads();
  if (i < n) x[i] /= total;
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
