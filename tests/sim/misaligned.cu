// A float4 load from an address 4 bytes past a 16-byte boundary: a GPU stops the kernel with
// "misaligned address"; the simulator faults naming the type and the line. With no argument the
// same kernel reads aligned addresses and the program checks the sums.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

__global__ void sum4(const float* x, float* out, int offset) {
  const float4 v = *reinterpret_cast<const float4*>(x + offset + 4 * threadIdx.x);
  out[threadIdx.x] = v.x + v.y + v.z + v.w;
}

int main(int argc, char** argv) {
  const int offset = argc > 1 ? atoi(argv[1]) : 0;
  float *x, *out, h[132], o[32];
  for (int i = 0; i < 132; ++i) h[i] = float(i);
  cudaMalloc(&x, sizeof h);
  cudaMalloc(&out, sizeof o);
  cudaMemcpy(x, h, sizeof h, cudaMemcpyHostToDevice);
  sum4<<<1, 32>>>(x, out, offset);
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    printf("sum4 with offset %d: %s\n", offset, cudaGetErrorString(e));
    return 1;
  }
  cudaMemcpy(o, out, sizeof o, cudaMemcpyDeviceToHost);
  int wrong = 0;
  for (int t = 0; t < 32; ++t) wrong += o[t] != 4.0f * (offset + 4 * t) + 6.0f;
  printf("sum4 with offset %d: %d of 32 wrong\n", offset, wrong);
  return wrong == 0 ? 0 : 1;
}
