// A planted race: each thread stores its value in shared memory and reads its left
// neighbour's without a __syncthreads() in between. Threads that happen to run in index
// order (as the simulator runs them by default) give the right answer, so the program
// passes its own check; `kernelab sim run --race-check` reverses the order and catches it.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                                 \
  do {                                                                              \
    cudaError_t e_ = (call);                                                        \
    if (e_ != cudaSuccess) {                                                        \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));  \
      exit(1);                                                                      \
    }                                                                               \
  } while (0)

constexpr int BLOCK = 128;

// out[i] = in[i] - in[i-1] (out[0] = in[0]), with the block's inputs staged in shared memory.
__global__ void differences(const int* in, int* out, int n) {
  __shared__ int tile[BLOCK];
  const int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) tile[threadIdx.x] = in[i];
  // BUG: __syncthreads() belongs here.
  if (i < n) {
    const int left = threadIdx.x > 0 ? tile[threadIdx.x - 1] : (i > 0 ? in[i - 1] : 0);
    out[i] = tile[threadIdx.x] - left;
  }
}

int main() {
  const int n = 1000;
  int host[n], *d_in, *d_out;
  for (int i = 0; i < n; ++i) host[i] = i * i;
  CHECK(cudaMalloc(&d_in, n * sizeof(int)));
  CHECK(cudaMalloc(&d_out, n * sizeof(int)));
  CHECK(cudaMemcpy(d_in, host, n * sizeof(int), cudaMemcpyHostToDevice));
  differences<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(d_in, d_out, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(host, d_out, n * sizeof(int), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int i = 0; i < n; ++i) wrong += host[i] != (i == 0 ? 0 : 2 * i - 1);
  printf("differences: %d values wrong\n", wrong);
  return wrong == 0 ? 0 : 1;
}
