// A block reduction in a template kernel: a grid-stride loop, warp shuffles, one shared
// slot per warp, then a second launch over the per-block partial sums. Checked for float
// and double against a sum in long double. Usage: reduce_warp [N]
#include <cuda_runtime.h>

#include <cmath>
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

template <typename T>
__device__ T warp_sum(T v) {
  for (int offset = warpSize / 2; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

template <int BLOCK, typename T>
__global__ void __launch_bounds__(BLOCK) block_sum(const T* __restrict__ in, T* __restrict__ out, long n) {
  static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "whole warps");
  __shared__ T warp_sums[BLOCK / 32];
  T v = 0;
  for (long i = blockIdx.x * long(BLOCK) + threadIdx.x; i < n; i += long(gridDim.x) * BLOCK) v += in[i];
  v = warp_sum(v);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < BLOCK / 32 ? warp_sums[lane] : T(0);
    v = warp_sum(v);
    if (lane == 0) out[blockIdx.x] = v;
  }
}

template <int BLOCK, typename T>
bool check(long n, int blocks) {
  std::vector<T> x(n);
  long double ref = 0;
  unsigned seed = 7;
  for (long i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    x[i] = T(seed >> 8) / T(1 << 24);  // in [0, 1)
    ref += x[i];
  }
  T *d_in, *d_partial, *d_total;
  CHECK(cudaMalloc(&d_in, n * sizeof(T)));
  CHECK(cudaMalloc(&d_partial, blocks * sizeof(T)));
  CHECK(cudaMalloc(&d_total, sizeof(T)));
  CHECK(cudaMemcpy(d_in, x.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  block_sum<BLOCK, T><<<blocks, BLOCK>>>(d_in, d_partial, n);
  CHECK(cudaGetLastError());
  block_sum<BLOCK, T><<<1, BLOCK>>>(d_partial, d_total, blocks);
  CHECK(cudaGetLastError());
  T total;
  CHECK(cudaMemcpy(&total, d_total, sizeof(T), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_partial));
  CHECK(cudaFree(d_total));
  const double rel = fabs(double(total - T(ref))) / double(ref);
  const double tolerance = sizeof(T) == 4 ? 1e-5 : 1e-12;
  printf("block_sum<%d, %s> over %ld values: %.6f, relative error %.1e (tolerance %.0e)\n", BLOCK,
         sizeof(T) == 4 ? "float" : "double", n, double(total), rel, tolerance);
  return rel <= tolerance;
}

int main(int argc, char** argv) {
  const long n = argc > 1 ? atol(argv[1]) : 1000003;
  const bool ok = check<256, float>(n, 120) & check<128, double>(n, 77) & check<1024, float>(n, 3);
  return ok ? 0 : 1;
}
