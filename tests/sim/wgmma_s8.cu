// Integer wgmma (m64nNk32, s8 x s8 -> s32) on K-major shared-memory layouts written by hand from the
// PTX ISA's description for 1-byte elements, as tests/sim/wgmma_fp8.cu does for e4m3: no swizzle (8 x
// 16-byte core matrices, LBO apart along K and SBO apart along M/N) and 32-, 64- and 128-byte swizzle.
// Every element of D against host loops, over the whole int8 range (-128 included); then D preloaded
// with 2^30 + 1 and the products added with scale-d 1, exact where an fp32 sum could not be.
// Build for a GPU: nvcc -arch=sm_90a -I src.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "cuda/ptx_sm90_fp8.h"

#define CHECK(call)                                                                \
  do {                                                                             \
    cudaError_t e_ = (call);                                                       \
    if (e_ != cudaSuccess) {                                                       \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      exit(1);                                                                     \
    }                                                                              \
  } while (0)

constexpr int M = 64, K = 32, kMaxN = 128, kBias = (1 << 30) + 1;
enum Layout { kNone, kB32, kB64, kB128, kLayouts };
const char* kNames[] = {"no swizzle", "32-byte swizzle", "64-byte swizzle", "128-byte swizzle"};

// Byte offset of element (mn, k) of a K-major 8-bit operand in layout L, from a 1024-byte-aligned base.
__host__ __device__ unsigned offset_of(int layout, int mn, int k) {
  if (layout == kNone) return (mn / 8) * 256 + (k / 16) * 128 + (mn % 8) * 16 + k % 16;  // LBO 128, SBO 256
  const unsigned width = layout == kB32 ? 32 : layout == kB64 ? 64 : 128, mask = width / 16 - 1;
  const unsigned a = (mn / 8) * 8 * width + (mn % 8) * width + k;  // SBO = 8 rows of the width
  return a ^ (((a >> 7) & mask) << 4);
}

// D = A B^T (scale-d 0) or D = kBias + A B^T (scale-d 1 on accumulators preloaded with kBias).
template <int N>
__global__ void one_warpgroup(const int8_t* a, const int8_t* b, int* d, int layout, int biased) {
#if KL_PTX_SM90A
  extern __shared__ __align__(1024) unsigned char smem[];
  unsigned char* sa = smem;         // 64 rows: 8 KiB at the widest layout
  unsigned char* sb = smem + 8192;  // N rows: 16 KiB at the widest
  for (int e = threadIdx.x; e < M * K; e += blockDim.x) sa[offset_of(layout, e / K, e % K)] = a[e];
  for (int e = threadIdx.x; e < N * K; e += blockDim.x) sb[offset_of(layout, e / K, e % K)] = b[e];
  kl::ptx::fence_proxy_async();  // generic-proxy writes, then the async proxy (wgmma) reads them
  __syncthreads();
  const kl::ptx::Swizzle sw = layout == kNone ? kl::ptx::Swizzle::none
                              : layout == kB32 ? kl::ptx::Swizzle::b32
                              : layout == kB64 ? kl::ptx::Swizzle::b64
                                               : kl::ptx::Swizzle::b128;
  const unsigned width = layout == kB32 ? 32 : layout == kB64 ? 64 : 128;
  const uint32_t lbo = layout == kNone ? 128 : 16, sbo = layout == kNone ? 256 : 8 * width;
  const uint64_t da = kl::ptx::smem_descriptor(sa, lbo, sbo, sw), db = kl::ptx::smem_descriptor(sb, lbo, sbo, sw);
  int acc[N / 2];
  for (int i = 0; i < N / 2; ++i) acc[i] = kBias;
  kl::ptx::fence_operands(acc);
  kl::ptx::wgmma_fence();
  if constexpr (N == 64) kl::ptx::wgmma_m64n64k32_s32_s8_ss(acc, da, db, biased);
  if constexpr (N == 128) kl::ptx::wgmma_m64n128k32_s32_s8_ss(acc, da, db, biased);
  kl::ptx::wgmma_commit();
  kl::ptx::wgmma_wait<0>();
  kl::ptx::fence_operands(acc);
  const int w = threadIdx.x / 32, g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
  for (int i = 0; i < N / 2; ++i) d[(16 * w + g + 8 * ((i % 4) / 2)) * N + 8 * (i / 4) + 2 * t + i % 2] = acc[i];
#endif
}

// N over every layout, unbiased and biased; returns the number of runs with a wrong element.
template <int N> int check_all(int8_t* da, int8_t* db, int* dd) {
  static int8_t a[M * K], b[kMaxN * K];
  for (int i = 0; i < M * K; ++i) a[i] = int8_t((i * 37 + 11) % 256 - 128);
  for (int i = 0; i < N * K; ++i) b[i] = int8_t((i * 53 + 5) % 256 - 128);
  a[0] = b[0] = -128;  // (-128)(-128): the one product of 2^14
  CHECK(cudaMemcpy(da, a, M * K, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, b, N * K, cudaMemcpyHostToDevice));
  int failed = 0;
  for (int biased = 0; biased < 2; ++biased)
    for (int layout = 0; layout < kLayouts; ++layout) {
      CHECK(cudaMemset(dd, 0xff, sizeof(int) * M * N));
      one_warpgroup<N><<<1, 128, 8192 + 16384>>>(da, db, dd, layout, biased);
      CHECK(cudaDeviceSynchronize());
      static int d[M * kMaxN];
      CHECK(cudaMemcpy(d, dd, sizeof(int) * M * N, cudaMemcpyDeviceToHost));
      int wrong = 0;
      for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
          int want = biased ? kBias : 0;
          for (int l = 0; l < K; ++l) want += a[i * K + l] * b[j * K + l];
          wrong += d[i * N + j] != want;
        }
      printf("wgmma m64n%dk32 s8%s, %s: %d of %d wrong\n", N, biased ? " onto 2^30 + 1" : "", kNames[layout], wrong, M * N);
      failed += wrong != 0;
    }
  return failed;
}

int main() {
  int8_t *da, *db;
  int* dd;
  CHECK(cudaMalloc(&da, M * K));
  CHECK(cudaMalloc(&db, kMaxN * K));
  CHECK(cudaMalloc(&dd, sizeof(int) * M * kMaxN));
  const int failed = check_all<64>(da, db, dd) + check_all<128>(da, db, dd);
  if (failed == 0) printf("wgmma s8 layouts: all checks passed\n");
  return failed == 0 ? 0 : 1;
}
