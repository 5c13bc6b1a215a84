// Threads past the end of the data return before the block's barriers, and a warp's shuffle
// names lanes that have returned: both allowed by CUDA (a block barrier waits for the threads
// that have not exited, since Volta; a warp collective for the non-exited lanes of its mask).
// Each block normalises its part of x by the part's sum; the program checks every value.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <vector>

__global__ void normalize(float* x, int n) {
  __shared__ float total;
  __shared__ int live;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (threadIdx.x == 0) total = 0, live = 0;
  __syncthreads();
  if (i >= n) return;  // the last block's extra threads skip the barrier below
  const unsigned voters = __ballot_sync(0xffffffffu, 1);                  // exited lanes vote nothing
  const float first = __shfl_sync(0xffffffffu, x[i], 0);                   // lane 0 of a warp with live lanes is live
  if (threadIdx.x % 32 == 0) atomicAdd(&live, __popc(voters));
  atomicAdd(&total, x[i] + 0.0f * first);
  __syncthreads();
  x[i] = x[i] / total + float(live == min(n - int(blockIdx.x * blockDim.x), int(blockDim.x)) ? 0 : 1000);
}

int main() {
  const int n = 1000, threads = 256, blocks = (n + threads - 1) / threads;
  std::vector<float> h(n);
  for (int i = 0; i < n; ++i) h[i] = 1.0f + float(i % 7);
  float* x;
  cudaMalloc(&x, n * sizeof(float));
  cudaMemcpy(x, h.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  normalize<<<blocks, threads>>>(x, n);
  std::vector<float> r(n);
  cudaMemcpy(r.data(), x, n * sizeof(float), cudaMemcpyDeviceToHost);
  int wrong = 0;
  for (int b = 0; b < blocks; ++b) {
    const int lo = b * threads, hi = lo + threads < n ? lo + threads : n;
    float sum = 0;
    for (int i = lo; i < hi; ++i) sum += h[i];
    for (int i = lo; i < hi; ++i) wrong += std::fabs(r[i] - h[i] / sum) > 1e-6f * (h[i] / sum);
  }
  printf("normalize with early exits: %d values wrong (%s)\n", wrong, cudaGetErrorString(cudaGetLastError()));
  return wrong == 0 ? 0 : 1;
}
