// A warp sum whose lanes past the data return first, then shuffle down with the full mask:
// lane 4 reads lane 20, which has exited, and CUDA leaves that value undefined. The simulator
// warns at the shuffle. The "padded" mode keeps every lane with a zero: no warning, exact sum.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

__global__ void warp_sum(const float* x, int n, float* out, bool pad) {
  const int i = threadIdx.x;
  if (!pad && i >= n) return;
  float v = i < n ? x[i] : 0.0f;
  for (int d = 16; d > 0; d /= 2) v += __shfl_down_sync(0xffffffffu, v, d);
  if (i == 0) *out = v;
}

int main(int argc, char** argv) {
  const bool pad = argc > 1 && std::strcmp(argv[1], "padded") == 0;
  const int n = 20;
  float h[32], *x, *out, sum = 0;
  for (int i = 0; i < n; ++i) h[i] = float(i + 1), sum += h[i];
  cudaMalloc(&x, sizeof h);
  cudaMalloc(&out, sizeof(float));
  cudaMemcpy(x, h, sizeof h, cudaMemcpyHostToDevice);
  warp_sum<<<1, 32>>>(x, n, out, pad);
  float got = 0;
  cudaMemcpy(&got, out, sizeof got, cudaMemcpyDeviceToHost);
  std::printf("warp sum of %d values (%s): %g, expected %g\n", n, pad ? "padded" : "early exit", got, sum);
  return got == sum ? 0 : 1;
}
