// A planted read of shared memory that nothing wrote: each block sums one row of COLS values
// with a tree over BLOCK slots, and the threads past the row's end leave their slot unwritten.
// On a GPU those slots hold whatever an earlier block left there. The simulator fills shared
// memory with 0xFF bytes at every block start (a float NaN), static __shared__ and dynamic
// alike, so every row's sum is NaN and the program's own check fails in every block.
// Usage: uninit_shared [static|dynamic]
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CHECK(call)                                                                 \
  do {                                                                              \
    cudaError_t e_ = (call);                                                        \
    if (e_ != cudaSuccess) {                                                        \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));  \
      exit(1);                                                                      \
    }                                                                               \
  } while (0)

constexpr int BLOCK = 128, COLS = 100, ROWS = 8;

__device__ float tree_sum(float* s) {
  for (int stride = BLOCK / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
    __syncthreads();
  }
  return s[0];
}

__global__ void row_sums_static(const float* x, float* sums) {
  __shared__ __align__(16) float s[BLOCK];
  if (threadIdx.x < COLS) s[threadIdx.x] = x[blockIdx.x * COLS + threadIdx.x];  // BUG: else s[threadIdx.x] = 0
  __syncthreads();
  const float sum = tree_sum(s);
  if (threadIdx.x == 0) sums[blockIdx.x] = sum;
}

__global__ void row_sums_dynamic(const float* x, float* sums) {
  extern __shared__ float s[];
  if (threadIdx.x < COLS) s[threadIdx.x] = x[blockIdx.x * COLS + threadIdx.x];  // BUG: else s[threadIdx.x] = 0
  __syncthreads();
  const float sum = tree_sum(s);
  if (threadIdx.x == 0) sums[blockIdx.x] = sum;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "static";
  float host[ROWS * COLS], sums[ROWS], *x, *d_sums;
  for (int i = 0; i < ROWS * COLS; ++i) host[i] = float(i % 7);
  CHECK(cudaMalloc(&x, sizeof host));
  CHECK(cudaMalloc(&d_sums, sizeof sums));
  CHECK(cudaMemcpy(x, host, sizeof host, cudaMemcpyHostToDevice));
  if (strcmp(mode, "static") == 0) {
    row_sums_static<<<ROWS, BLOCK>>>(x, d_sums);
  } else if (strcmp(mode, "dynamic") == 0) {
    row_sums_dynamic<<<ROWS, BLOCK, BLOCK * sizeof(float)>>>(x, d_sums);
  } else {
    fprintf(stderr, "usage: uninit_shared [static|dynamic]\n");
    return 2;
  }
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(sums, d_sums, sizeof sums, cudaMemcpyDeviceToHost));
  int wrong = 0, nan = 0;
  for (int r = 0; r < ROWS; ++r) {
    float expected = 0;  // exact: small integers
    for (int c = 0; c < COLS; ++c) expected += host[r * COLS + c];
    wrong += sums[r] != expected;
    nan += std::isnan(sums[r]);
  }
  printf("row sums in %s shared memory: %d of %d rows wrong (%d NaN)\n", mode, wrong, ROWS, nan);
  CHECK(cudaFree(x));
  CHECK(cudaFree(d_sums));
  return wrong == 0 ? 0 : 1;
}
