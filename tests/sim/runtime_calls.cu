// What ordinary programs pass and call that the simulator refused before: NULL and nullptr for
// a kernel's pointer parameters, cudaMallocPitch/cudaMemcpy2D/cudaMemcpy2DAsync/cudaMemset2D
// on a pitched matrix, and a __forceinline__ function handed by pointer to cooperative groups'
// reduce. The program checks every value itself.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

namespace cg = cooperative_groups;

__device__ __forceinline__ float add(float a, float b) { return a + b; }

// Adds 1 to each element of a pitched rows x cols matrix; `bias`, when given, adds bias[c].
__global__ void add_one(float* m, size_t pitch, int rows, int cols, const float* bias) {
  const int r = blockIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  float* row = reinterpret_cast<float*>(reinterpret_cast<char*>(m) + r * pitch);
  row[c] += 1.0f + (bias ? bias[c] : 0.0f);
}

// Each warp's sum of its lanes' values, by cg::reduce with a function pointer as the operator.
__global__ void warp_sums(const float* x, float* out, int* unused) {
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(cg::this_thread_block());
  const float s = cg::reduce(warp, x[threadIdx.x], add);
  if (warp.thread_rank() == 0) out[threadIdx.x / 32] = s + (unused ? 1.0f : 0.0f);
}

int main() {
  const int rows = 5, cols = 37;
  std::vector<float> h(rows * cols);
  for (int i = 0; i < rows * cols; ++i) h[i] = float(i % 11);
  float* m;
  size_t pitch = 0;
  cudaMallocPitch(reinterpret_cast<void**>(&m), &pitch, cols * sizeof(float), rows);
  cudaMemset2D(m, pitch, 0, cols * sizeof(float), rows);
  cudaMemcpy2D(m, pitch, h.data(), cols * sizeof(float), cols * sizeof(float), rows, cudaMemcpyHostToDevice);
  add_one<<<dim3((cols + 31) / 32, rows), 32>>>(m, pitch, rows, cols, NULL);
  add_one<<<dim3((cols + 31) / 32, rows), 32>>>(m, pitch, rows, cols, nullptr);
  std::vector<float> back(rows * cols);
  cudaStream_t s;
  cudaStreamCreate(&s);
  cudaMemcpy2DAsync(back.data(), cols * sizeof(float), m, pitch, cols * sizeof(float), rows, cudaMemcpyDeviceToHost, s);
  cudaStreamSynchronize(s);
  int wrong = 0;
  for (int i = 0; i < rows * cols; ++i) wrong += back[i] != h[i] + 2.0f;

  float *x, *sums;
  cudaMalloc(&x, 64 * sizeof(float));
  cudaMalloc(&sums, 2 * sizeof(float));
  cudaMemcpy(x, h.data(), 64 * sizeof(float), cudaMemcpyHostToDevice);
  warp_sums<<<1, 64>>>(x, sums, NULL);
  float got[2];
  cudaMemcpy(got, sums, sizeof got, cudaMemcpyDeviceToHost);
  for (int w = 0; w < 2; ++w) {
    float want = 0;
    for (int l = 0; l < 32; ++l) want += h[32 * w + l];
    wrong += got[w] != want;
  }
  printf("runtime calls: pitch %zu, %d values wrong (%s)\n", pitch, wrong, cudaGetErrorString(cudaGetLastError()));
  return wrong == 0 ? 0 : 1;
}
