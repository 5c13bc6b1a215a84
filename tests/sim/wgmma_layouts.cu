// wgmma's shared-memory layouts, each written by hand from the PTX ISA's description and
// multiplied by one warpgroup (m64n64k16, bf16 -> f32): K-major A and B with no swizzle (8x16-byte
// core matrices, LBO apart along K and SBO apart along M/N), and with 32-, 64- and 128-byte
// swizzle (rows of the swizzle width, 8-row atoms SBO apart, the 16-byte chunk index XORed with
// the row within the atom's 128-byte lines: address bits 4-6 ^= bits 7-9, masked to the width),
// then A from registers in mma.sync's fragment layout, and with it B MN-major (imm-trans-b: 128-byte
// rows of 64 consecutive n for one k, 8 k per atom, atoms SBO = 1024 bytes apart along K: a
// row-major [k][n] tile as TMA lands it). Small integers: every sum is exact, so a
// GPU run checks the simulator's twin bit for bit. Build for a GPU: nvcc -arch=sm_90a -I src.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cuda/ptx.h"

#define CHECK(call)                                                                \
  do {                                                                             \
    cudaError_t e_ = (call);                                                       \
    if (e_ != cudaSuccess) {                                                       \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      exit(1);                                                                     \
    }                                                                              \
  } while (0)

constexpr int M = 64, N = 64, K = 16;
enum Layout { kNone, kB32, kB64, kB128, kRegistersA, kMnMajorB, kLayouts };
const char* kNames[] = {"no swizzle", "32-byte swizzle", "64-byte swizzle", "128-byte swizzle", "A from registers",
                        "A from registers, B MN-major"};

// Byte offset of element (n, k) of an MN-major B, 128-byte swizzle: k's row of 64 n, 8-row atoms.
__host__ __device__ unsigned offset_mn(int n, int k) {
  const unsigned a = (k / 8) * 1024 + (k % 8) * 128 + n * 2;
  return a ^ (((a >> 7) & 7) << 4);
}

// Byte offset of element (mn, k) of a K-major operand in layout L, from a 1024-byte-aligned base.
__host__ __device__ unsigned offset_of(int layout, int mn, int k) {
  if (layout == kNone) return (mn / 8) * 256 + (k / 8) * 128 + (mn % 8) * 16 + (k % 8) * 2;  // LBO 128, SBO 256
  const unsigned width = layout == kB32 ? 32 : layout == kB64 ? 64 : 128, mask = width / 16 - 1;
  const unsigned a = (mn / 8) * 8 * width + (mn % 8) * width + k * 2;  // SBO = 8 rows of the width
  return a ^ (((a >> 7) & mask) << 4);
}

__global__ void one_warpgroup(const __nv_bfloat16* a, const __nv_bfloat16* b, float* d, int layout) {
#if KL_PTX_SM90A
  extern __shared__ __align__(1024) unsigned char smem[];
  unsigned char* sa = smem;         // 8 KiB for A (64 rows)
  unsigned char* sb = smem + 8192;  // 8 KiB for B (64 rows)
  const int smem_layout = layout == kRegistersA || layout == kMnMajorB ? kB128 : layout;
  for (int e = threadIdx.x; e < M * K; e += blockDim.x) memcpy(sa + offset_of(smem_layout, e / K, e % K), &a[e], 2);
  for (int e = threadIdx.x; e < N * K; e += blockDim.x)
    memcpy(sb + (layout == kMnMajorB ? offset_mn(e / K, e % K) : offset_of(smem_layout, e / K, e % K)), &b[e], 2);
  kl::ptx::fence_proxy_async();  // generic-proxy writes, then the async proxy (wgmma) reads them
  __syncthreads();
  const kl::ptx::Swizzle sw = smem_layout == kNone ? kl::ptx::Swizzle::none
                              : smem_layout == kB32 ? kl::ptx::Swizzle::b32
                              : smem_layout == kB64 ? kl::ptx::Swizzle::b64
                                                    : kl::ptx::Swizzle::b128;
  const unsigned width = smem_layout == kB32 ? 32 : smem_layout == kB64 ? 64 : 128;
  const uint32_t lbo = smem_layout == kNone ? 128 : 16, sbo = smem_layout == kNone ? 256 : 8 * width;
  float acc[32] = {};
  kl::ptx::wgmma_fence();
  if (layout == kRegistersA || layout == kMnMajorB) {
    // mma.sync's A layout per warp w of the warpgroup: a[r], half e = A[16w + g + 8(r&1)][2t + e + 8(r>>1)].
    const int w = threadIdx.x / 32, g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
    uint32_t frag[4];
    for (int r = 0; r < 4; ++r) {
      const int row = 16 * w + g + 8 * (r & 1), col = 2 * t + 8 * (r >> 1);
      memcpy(&frag[r], &a[row * K + col], 4);
    }
    if (layout == kMnMajorB)  // LBO: the next 64 n (none here, N = 64); SBO: the next 8 k
      kl::ptx::wgmma_m64n64k16_f32_bf16_rs_mn(acc, frag, kl::ptx::smem_descriptor(sb, 8192, 1024, sw), 0);
    else
      kl::ptx::wgmma_m64n64k16_f32_bf16_rs(acc, frag, kl::ptx::smem_descriptor(sb, lbo, sbo, sw), 0);
  } else {
    kl::ptx::wgmma_m64n64k16_f32_bf16_ss(acc, kl::ptx::smem_descriptor(sa, lbo, sbo, sw), kl::ptx::smem_descriptor(sb, lbo, sbo, sw), 0);
  }
  kl::ptx::wgmma_commit();
  kl::ptx::wgmma_wait<0>();
  const int w = threadIdx.x / 32, g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
  for (int i = 0; i < 32; ++i) d[(16 * w + g + 8 * ((i % 4) / 2)) * N + 8 * (i / 4) + 2 * t + i % 2] = acc[i];
#endif
}

int main() {
  __nv_bfloat16 a[M * K], b[N * K];  // A row-major (K-major), B as N rows of K (K-major)
  int ai[M * K], bi[N * K];
  for (int i = 0; i < M * K; ++i) ai[i] = (i * 7 + 3) % 9 - 4, a[i] = __float2bfloat16(float(ai[i]));
  for (int i = 0; i < N * K; ++i) bi[i] = (i * 5 + 1) % 7 - 3, b[i] = __float2bfloat16(float(bi[i]));
  __nv_bfloat16 *da, *db;
  float* dd;
  CHECK(cudaMalloc(&da, sizeof a));
  CHECK(cudaMalloc(&db, sizeof b));
  CHECK(cudaMalloc(&dd, sizeof(float) * M * N));
  CHECK(cudaMemcpy(da, a, sizeof a, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, b, sizeof b, cudaMemcpyHostToDevice));
  int failed = 0;
  for (int layout = 0; layout < kLayouts; ++layout) {
    CHECK(cudaMemset(dd, 0xff, sizeof(float) * M * N));
    one_warpgroup<<<1, 128, 16384>>>(da, db, dd, layout);
    CHECK(cudaDeviceSynchronize());
    static float d[M * N];
    CHECK(cudaMemcpy(d, dd, sizeof d, cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        int want = 0;
        for (int l = 0; l < K; ++l) want += ai[i * K + l] * bi[j * K + l];
        wrong += d[i * N + j] != float(want);
      }
    printf("wgmma m64n64k16 bf16, %s: %d of %d wrong\n", kNames[layout], wrong, M * N);
    failed += wrong != 0;
  }
  if (failed == 0) printf("wgmma layouts: all checks passed\n");
  return failed == 0 ? 0 : 1;
}
