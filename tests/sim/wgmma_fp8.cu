// 8-bit wgmma (m64nNk32, e4m3 and e5m2 -> f32) on K-major shared-memory layouts written by hand
// from the PTX ISA's description for 1-byte elements: no swizzle (8 x 16-byte core matrices, each
// row 16 elements of k, LBO apart along K and SBO apart along M/N), and 32-, 64- and 128-byte
// swizzle (rows of the swizzle width, i.e. 32, 64 or 128 k, 8-row atoms SBO apart, the 16-byte
// chunk index XORed with the row within the atom's 128-byte lines). Every element of D is compared,
// so every lane's fragment (d[i] at row 16w + g + 8((i%4)/2), column 8(i/4) + 2t + i%2). Small
// integers, exact in both formats and in every fp32 sum, so a GPU run checks the twin bit for bit.
// Build for a GPU: nvcc -arch=sm_90a -I src.
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cuda/ptx_sm90_fp8.h"

#define CHECK(call)                                                                \
  do {                                                                             \
    cudaError_t e_ = (call);                                                       \
    if (e_ != cudaSuccess) {                                                       \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      exit(1);                                                                     \
    }                                                                              \
  } while (0)

constexpr int M = 64, K = 32, kMaxN = 128;
enum Layout { kNone, kB32, kB64, kB128, kLayouts };
const char* kNames[] = {"no swizzle", "32-byte swizzle", "64-byte swizzle", "128-byte swizzle"};

// Byte offset of element (mn, k) of a K-major 8-bit operand in layout L, from a 1024-byte-aligned base.
__host__ __device__ unsigned offset_of(int layout, int mn, int k) {
  if (layout == kNone) return (mn / 8) * 256 + (k / 16) * 128 + (mn % 8) * 16 + k % 16;  // LBO 128, SBO 256
  const unsigned width = layout == kB32 ? 32 : layout == kB64 ? 64 : 128, mask = width / 16 - 1;
  const unsigned a = (mn / 8) * 8 * width + (mn % 8) * width + k;  // SBO = 8 rows of the width
  return a ^ (((a >> 7) & mask) << 4);
}

template <int N, bool kE5m2>
__global__ void one_warpgroup(const unsigned char* a, const unsigned char* b, float* d, int layout) {
#if KL_PTX_SM90A
  extern __shared__ __align__(1024) unsigned char smem[];
  unsigned char* sa = smem;          // 64 rows: 8 KiB at the widest layout
  unsigned char* sb = smem + 8192;   // N rows: 16 KiB at the widest
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
  float acc[N / 2];
  kl::ptx::wgmma_fence();
  if constexpr (N == 64 && !kE5m2) kl::ptx::wgmma_m64n64k32_f32_e4m3_ss(acc, da, db, 0);
  if constexpr (N == 64 && kE5m2) kl::ptx::wgmma_m64n64k32_f32_e5m2_ss(acc, da, db, 0);
  if constexpr (N == 128 && !kE5m2) kl::ptx::wgmma_m64n128k32_f32_e4m3_ss(acc, da, db, 0);
  if constexpr (N == 128 && kE5m2) kl::ptx::wgmma_m64n128k32_f32_e5m2_ss(acc, da, db, 0);
  kl::ptx::wgmma_commit();
  kl::ptx::wgmma_wait<0>();
  kl::ptx::fence_operands(acc);
  const int w = threadIdx.x / 32, g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
  for (int i = 0; i < N / 2; ++i) d[(16 * w + g + 8 * ((i % 4) / 2)) * N + 8 * (i / 4) + 2 * t + i % 2] = acc[i];
#endif
}

// How many significant bits the accumulation into D keeps: D = 2^E (one wgmma, scale-d 0), then one
// more adding exactly 1 (scale-d 1). fp32 keeps 2^E + 1 up to E = 23; the hardware's 8-bit wgmma
// fewer (DeepSeek-V3: "around 14 bits"; an H200: 14, truncated toward zero, as src/sim/hopper_fp8.h models).
__global__ void accumulate_one(const unsigned char* big, const unsigned char* one, float* d) {
#if KL_PTX_SM90A
  extern __shared__ __align__(1024) unsigned char smem[];
  unsigned char *sa = smem, *sb = smem + 2048, *sa1 = smem + 4096, *sb1 = smem + 6144;  // A 64 x 32, B 64 x 32
  for (int e = threadIdx.x; e < 64 * K; e += blockDim.x) {
    const unsigned at = offset_of(kNone, e / K, e % K);
    sa[at] = big[e % K], sb[at] = big[K + e % K], sa1[at] = one[e % K], sb1[at] = one[K + e % K];
  }
  kl::ptx::fence_proxy_async();
  __syncthreads();
  const auto desc = [](unsigned char* p) { return kl::ptx::smem_descriptor(p, 128, 256, kl::ptx::Swizzle::none); };
  float acc[32];
  kl::ptx::wgmma_fence();
  kl::ptx::wgmma_m64n64k32_f32_e4m3_ss(acc, desc(sa), desc(sb), 0);
  kl::ptx::wgmma_m64n64k32_f32_e4m3_ss(acc, desc(sa1), desc(sb1), 1);
  kl::ptx::wgmma_commit();
  kl::ptx::wgmma_wait<0>();
  kl::ptx::fence_operands(acc);
  if (threadIdx.x == 0) *d = acc[0];
#endif
}

// D = sign * 2^E (one wgmma), then D + add (a second, whose one nonzero product is add * 1; |add| <= 3).
float accumulate(int sign, int e, int add, unsigned char* dbig, unsigned char* done, float* dd) {
  unsigned char big[2 * K] = {}, one[2 * K] = {};
  // 2^E as the sum of 2^(E-16) products of 2^8 * 2^8 when E > 16, else one product 2^min(E,8) * 2^(E-min(E,8)).
  const int terms = e > 16 ? 1 << (e - 16) : 1, ea = e > 16 ? 8 : e < 8 ? e : 8, eb = e > 16 ? 8 : e - ea;
  for (int k = 0; k < terms; ++k)
    big[k] = __nv_fp8_e4m3(float(sign * (1 << ea))).__x, big[K + k] = __nv_fp8_e4m3(float(1 << eb)).__x;
  one[0] = __nv_fp8_e4m3(float(add)).__x, one[K] = __nv_fp8_e4m3(1.0f).__x;
  CHECK(cudaMemcpy(dbig, big, 2 * K, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(done, one, 2 * K, cudaMemcpyHostToDevice));
  accumulate_one<<<1, 128, 8192>>>(dbig, done, dd);
  CHECK(cudaDeviceSynchronize());
  float d = 0;
  CHECK(cudaMemcpy(&d, dd, sizeof d, cudaMemcpyDeviceToHost));
  return d;
}

// The largest E (8..21) for which 2^E + 1 came out exact (the accumulation keeps E + 1 bits), then
// how it drops a bit: at the first E that cannot hold 2^E + 1, 2^E + 3 and -2^E - 3 lie halfway
// between two sums it can hold. Toward zero gives 2^E + 2 and -2^E - 2; toward minus infinity
// 2^E + 2 and -2^E - 4; to nearest (ties to even) 2^E + 4 and -2^E - 4.
void accumulation_bits(unsigned char* dbig, unsigned char* done, float* dd) {
  int kept = 0;
  for (int e = 8; e <= 21; ++e)
    if (double(accumulate(1, e, 1, dbig, done, dd)) == std::ldexp(1.0, e) + 1.0) kept = e + 1;
  const double big = std::ldexp(1.0, kept);
  const double up = accumulate(1, kept, 3, dbig, done, dd) - big, down = accumulate(-1, kept, -3, dbig, done, dd) + big;
  const char* mode = up == 2 && down == -2 ? "toward zero" : up == 2 && down == -4 ? "toward minus infinity"
                     : up == 4 && down == -4 ? "to nearest" : "by no rule tested";
  printf("wgmma e4m3 accumulation: 2^E + 1 exact up to %d significant bits (fp32: 24); "
         "2^%d + 3 -> 2^%d %+g, -2^%d - 3 -> -2^%d %+g: rounds %s\n", kept, kept, kept, up, kept, kept, down, mode);
}

unsigned char encode(int v, bool e5m2) { return e5m2 ? __nv_fp8_e5m2(float(v)).__x : __nv_fp8_e4m3(float(v)).__x; }

// One format and N over every layout; returns the number of layouts with a wrong element.
template <int N, bool kE5m2> int check_all(unsigned char* da, unsigned char* db, float* dd) {
  static int ai[M * K], bi[kMaxN * K];
  unsigned char a[M * K], b[kMaxN * K];
  for (int i = 0; i < M * K; ++i) ai[i] = (i * 7 + 3) % 9 - 4, a[i] = encode(ai[i], kE5m2);
  for (int i = 0; i < N * K; ++i) bi[i] = (i * 5 + 1) % 7 - 3, b[i] = encode(bi[i], kE5m2);
  CHECK(cudaMemcpy(da, a, M * K, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, b, N * K, cudaMemcpyHostToDevice));
  int failed = 0;
  for (int layout = 0; layout < kLayouts; ++layout) {
    CHECK(cudaMemset(dd, 0xff, sizeof(float) * M * N));
    one_warpgroup<N, kE5m2><<<1, 128, 8192 + 16384>>>(da, db, dd, layout);
    CHECK(cudaDeviceSynchronize());
    static float d[M * kMaxN];
    CHECK(cudaMemcpy(d, dd, sizeof(float) * M * N, cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        int want = 0;
        for (int l = 0; l < K; ++l) want += ai[i * K + l] * bi[j * K + l];
        wrong += d[i * N + j] != float(want);
      }
    printf("wgmma m64n%dk32 %s, %s: %d of %d wrong\n", N, kE5m2 ? "e5m2" : "e4m3", kNames[layout], wrong, M * N);
    failed += wrong != 0;
  }
  return failed;
}

int main() {
  unsigned char *da, *db;
  float* dd;
  CHECK(cudaMalloc(&da, M * K));
  CHECK(cudaMalloc(&db, kMaxN * K));
  CHECK(cudaMalloc(&dd, sizeof(float) * M * kMaxN));
  const int failed = check_all<64, false>(da, db, dd) + check_all<128, false>(da, db, dd) + check_all<64, true>(da, db, dd) +
                     check_all<128, true>(da, db, dd);
  accumulation_bits(da, db, dd);
  if (failed == 0) printf("wgmma fp8 layouts: all checks passed\n");
  return failed == 0 ? 0 : 1;
}
