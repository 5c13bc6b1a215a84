// A histogram with one private copy per block in dynamic shared memory (its size set at
// launch), shared-memory atomics, then global atomics to merge. More than 48 KiB of bins
// needs cudaFuncSetAttribute, as on a GPU. Checked exactly. Usage: histogram [BINS [N]]
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                 \
  do {                                                                              \
    cudaError_t e_ = (call);                                                        \
    if (e_ != cudaSuccess) {                                                        \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));  \
      exit(1);                                                                      \
    }                                                                               \
  } while (0)

__global__ void histogram(const unsigned* __restrict__ values, int n, unsigned* __restrict__ bins, int nbins) {
  extern __shared__ unsigned local[];
  for (int b = threadIdx.x; b < nbins; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&local[values[i] % nbins], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < nbins; b += blockDim.x)
    if (local[b]) atomicAdd(&bins[b], local[b]);
}

int main(int argc, char** argv) {
  const int nbins = argc > 1 ? atoi(argv[1]) : 100, n = argc > 2 ? atoi(argv[2]) : 200000;
  std::vector<unsigned> values(n), expected(nbins, 0), got(nbins);
  unsigned seed = 99;
  for (unsigned& v : values) {
    seed = seed * 1664525u + 1013904223u;
    v = (seed >> 16) * (seed >> 20);  // skewed: many values collide in the low bins
    ++expected[v % nbins];
  }
  unsigned *d_values, *d_bins;
  CHECK(cudaMalloc(&d_values, n * sizeof(unsigned)));
  CHECK(cudaMalloc(&d_bins, nbins * sizeof(unsigned)));
  CHECK(cudaMemcpy(d_values, values.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(d_bins, 0, nbins * sizeof(unsigned)));
  const size_t smem = nbins * sizeof(unsigned);
  if (smem > 48 * 1024) CHECK(cudaFuncSetAttribute(histogram, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  histogram<<<48, 256, smem>>>(d_values, n, d_bins, nbins);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(got.data(), d_bins, nbins * sizeof(unsigned), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int b = 0; b < nbins; ++b) wrong += got[b] != expected[b];
  printf("histogram of %d values into %d bins (%zu bytes of shared memory): %d bins wrong\n", n, nbins, smem, wrong);
  CHECK(cudaFree(d_values));
  CHECK(cudaFree(d_bins));
  return wrong == 0 ? 0 : 1;
}
