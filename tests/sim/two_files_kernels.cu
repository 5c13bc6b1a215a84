// The kernel half of a program in two files (two_files_main.cc calls scale_on_gpu).
#include <cuda_runtime.h>

__global__ void scale(float* x, float by, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= by;
}

cudaError_t scale_on_gpu(float* x, float by, int n) {
  scale<<<(n + 127) / 128, 128>>>(x, by, n);
  return cudaGetLastError();
}
