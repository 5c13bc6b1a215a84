// Planted bad accesses, one per mode (argv[1]):
//   global  - a kernel without a bounds check writes past the end of a cudaMalloc buffer
//   shared  - a block writes past the end of a static __shared__ array
//   freed   - a kernel is launched on a buffer that was already freed
// Run with `kernelab sim run --memcheck oob.cu -- MODE`: each fails, naming kernel, block and thread.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

__global__ void scale(float* x, float a) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  x[i] *= a;  // BUG: no `if (i < n)`, and the grid covers more than n
}

__global__ void stage(const float* x, float* y) {
  __shared__ float tile[64];
  tile[threadIdx.x] = x[threadIdx.x];  // BUG: the block has 128 threads
  __syncthreads();
  y[threadIdx.x] = tile[threadIdx.x] + tile[127 - threadIdx.x];
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "global";
  const int n = 1000;
  float *x, *y;
  cudaMalloc(&x, n * sizeof(float));
  cudaMalloc(&y, n * sizeof(float));
  cudaMemset(x, 0, n * sizeof(float));
  if (strcmp(mode, "global") == 0) {
    scale<<<(n + 255) / 256 + 1, 256>>>(x, 2.0f);
  } else if (strcmp(mode, "shared") == 0) {
    stage<<<1, 128>>>(x, y);
  } else if (strcmp(mode, "freed") == 0) {
    cudaFree(x);
    scale<<<1, 32>>>(x, 2.0f);
  } else {
    fprintf(stderr, "usage: oob [global|shared|freed]\n");
    return 2;
  }
  const cudaError_t e = cudaDeviceSynchronize();
  printf("oob %s: %s\n", mode, cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
