// Every kl::ptx wrapper in one kernel, checked on the host against plain loops: cp.async
// (4, 8, 16 bytes) stages the operands in shared memory, ldmatrix loads the fragments, mma.sync
// multiplies (f16, bf16, s8, e4m3, e5m2), movmatrix and the .trans loads are checked on a
// matrix whose elements encode (row, column). The same program runs under `kernelab sim run`
// (the twins) and on a GPU (the instructions), so a GPU session confirms the twins' layouts.
// nvcc: -arch=sm_90a builds everything; for sm_80 the fp8 mma is left out (it needs sm_89).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>
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

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 890 || defined(PTX_FP8_ON_EVERY_ARCH)
#define WITH_FP8 1
#endif

enum Kind { kF16, kBF16, kS8, kE4M3, kE5M2, kKinds };

// Operands as stored in memory: A row-major 16 x 32 bytes, B transposed (n-major) 8 x 32 bytes,
// so that ldmatrix rows are 16-byte rows of both. C and D are 16 x 8 row-major.
struct alignas(16) Problem {
  unsigned char a[kKinds][16][32];
  unsigned char bt[kKinds][8][32];
  float c[16][8];
  int ci[16][8];
  unsigned short tile[4][8][8];  // tile[i][r][c] = i<<8 | r<<4 | c
};
struct Result {
  float d[kKinds][16][8];  // s8 as int bits
  unsigned ld[6][32][4];   // x1, x2, x4, x1.trans, x2.trans, x4.trans: [lane][register]
  unsigned mov[32];
  unsigned lop[2][32];  // lop3 (a & b) | c and a ^ b ^ c on per-lane words
  int fp8_ran;
};

__device__ void store_d(float (&out)[16][8], const float (&d)[4]) {
  const int lane = threadIdx.x, g = lane / 4, t = lane % 4;
  for (int i = 0; i < 4; ++i) out[g + 8 * (i >> 1)][2 * t + (i & 1)] = d[i];
}

__global__ void every_wrapper(const Problem* p, Result* out) {
  __shared__ __align__(16) unsigned char a[kKinds][16][32];
  __shared__ __align__(16) unsigned char bt[kKinds][8][32];
  __shared__ __align__(16) float c[16][8];
  __shared__ __align__(16) int ci[16][8];
  __shared__ __align__(16) unsigned short tile[4][8][8];
  const int lane = threadIdx.x;
  // cp.async: A in 16-byte pieces, B in 8, C in 4; two groups, then the waits.
  for (int i = lane; i < kKinds * 16 * 2; i += 32) kl::ptx::cp_async_16(&a[0][0][0] + 16 * i, &p->a[0][0][0] + 16 * i);
  for (int i = lane; i < kKinds * 8 * 4; i += 32) kl::ptx::cp_async_8(&bt[0][0][0] + 8 * i, &p->bt[0][0][0] + 8 * i);
  kl::ptx::cp_async_commit();
  for (int i = lane; i < 128; i += 32) {
    kl::ptx::cp_async_4(&c[0][0] + i, &p->c[0][0] + i);
    kl::ptx::cp_async_4(&ci[0][0] + i, &p->ci[0][0] + i);
  }
  for (int i = lane; i < 32; i += 32) kl::ptx::cp_async_16(&tile[0][0][0] + 8 * i, &p->tile[0][0][0] + 8 * i);
  kl::ptx::cp_async_commit();
  kl::ptx::cp_async_wait<1>();
  kl::ptx::cp_async_wait<0>();
  kl::ptx::cp_async_wait_all();
  __syncthreads();

  // A: lanes 0-15 rows 0-15 at byte 0, lanes 16-31 at byte 16; B: lanes 0-7 at byte 0, 8-15 at 16.
  const int g = lane / 4, t = lane % 4;
  float cf[4];
  int cs[4];
  for (int i = 0; i < 4; ++i) cf[i] = c[g + 8 * (i >> 1)][2 * t + (i & 1)], cs[i] = ci[g + 8 * (i >> 1)][2 * t + (i & 1)];
  for (int k = 0; k < kKinds; ++k) {
    uint32_t ra[4], rb[2];
    float d[4];
    kl::ptx::ldmatrix_x4(ra, &a[k][lane % 16][16 * (lane / 16)]);
    kl::ptx::ldmatrix_x2(rb, &bt[k][lane % 8][16 * ((lane / 8) % 2)]);
    if (k == kF16) kl::ptx::mma_m16n8k16_f16_f32(d, ra, rb, cf);
    if (k == kBF16) kl::ptx::mma_m16n8k16_bf16_f32(d, ra, rb, cf);
    if (k == kS8) {
      int di[4];
      kl::ptx::mma_m16n8k32_s8_s32(di, ra, rb, cs);
      for (int i = 0; i < 4; ++i) memcpy(&d[i], &di[i], 4);
    }
#if WITH_FP8
    if (k == kE4M3) kl::ptx::mma_m16n8k32_e4m3_f32(d, ra, rb, cf);
    if (k == kE5M2) kl::ptx::mma_m16n8k32_e5m2_f32(d, ra, rb, cf);
#else
    if (k == kE4M3 || k == kE5M2) continue;
#endif
    store_d(out->d[k], d);
  }
#if WITH_FP8
  if (lane == 0) out->fp8_ran = 1;
#endif

  // Lane l gives row l%8 of matrix l/8 (lanes past the matrices used give matrix 3's rows).
  const void* row = &tile[lane / 8][lane % 8][0];
  uint32_t r1[1], r2[2], r4[4];
  kl::ptx::ldmatrix_x1(r1, row);
  out->ld[0][lane][0] = r1[0];
  out->mov[lane] = kl::ptx::movmatrix_trans(r1[0]);
  out->lop[0][lane] = kl::ptx::lop3<0xEA>(r1[0] * 2654435761u, 0x000f000fu, 0x64006400u);
  out->lop[1][lane] = kl::ptx::lop3<0x96>(r1[0], r1[0] * 40503u, ~r1[0] >> 3);
  kl::ptx::ldmatrix_x2(r2, row);
  for (int i = 0; i < 2; ++i) out->ld[1][lane][i] = r2[i];
  kl::ptx::ldmatrix_x4(r4, row);
  for (int i = 0; i < 4; ++i) out->ld[2][lane][i] = r4[i];
  kl::ptx::ldmatrix_x1_trans(r1, row);
  out->ld[3][lane][0] = r1[0];
  kl::ptx::ldmatrix_x2_trans(r2, row);
  for (int i = 0; i < 2; ++i) out->ld[4][lane][i] = r2[i];
  kl::ptx::ldmatrix_x4_trans(r4, row);
  for (int i = 0; i < 4; ++i) out->ld[5][lane][i] = r4[i];
}

// ---- host: encodings, references, checks ----------------------------------------------------

float decode(int kind, unsigned char lo, unsigned char hi) {
  const unsigned short bits = static_cast<unsigned short>(lo | hi << 8);
  if (kind == kF16) return __half2float(__ushort_as_half(bits));
  if (kind == kBF16) return __bfloat162float(__ushort_as_bfloat16(bits));
  if (kind == kS8) return float(static_cast<signed char>(lo));
  __nv_fp8_e4m3 e4;
  __nv_fp8_e5m2 e5;
  e4.__x = lo, e5.__x = lo;
  return kind == kE4M3 ? float(e4) : float(e5);
}

void encode(int kind, unsigned char* p, int v) {  // element v (a small integer) at p
  if (kind == kF16 || kind == kBF16) {
    const unsigned short bits =
        kind == kF16 ? __half_as_ushort(__float2half(float(v))) : __bfloat16_as_ushort(__float2bfloat16(float(v)));
    memcpy(p, &bits, 2);
  } else if (kind == kS8) {
    *p = static_cast<unsigned char>(static_cast<signed char>(v));
  } else {
    *p = kind == kE4M3 ? __nv_fp8_e4m3(float(v)).__x : __nv_fp8_e5m2(float(v)).__x;
  }
}

int main() {
  static Problem h;
  static Result res;
  unsigned seed = 12345;
  auto rnd = [&](int lo, int hi) { return seed = seed * 1664525u + 1013904223u, lo + int((seed >> 8) % unsigned(hi - lo + 1)); };
  static int av[kKinds][16][32], bv[kKinds][32][8];
  for (int k = 0; k < kKinds; ++k) {
    const int K = k <= kBF16 ? 16 : 32, bytes = k <= kBF16 ? 2 : 1, range = k == kS8 ? 127 : 8;
    for (int m = 0; m < 16; ++m)
      for (int j = 0; j < K; ++j) encode(k, &h.a[k][m][j * bytes], av[k][m][j] = rnd(-range, range));
    for (int j = 0; j < K; ++j)
      for (int n = 0; n < 8; ++n) encode(k, &h.bt[k][n][j * bytes], bv[k][j][n] = rnd(-range, range));
  }
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 8; ++n) h.c[m][n] = float(rnd(-50, 50)), h.ci[m][n] = rnd(-100000, 100000);
  for (int i = 0; i < 4; ++i)
    for (int r = 0; r < 8; ++r)
      for (int c = 0; c < 8; ++c) h.tile[i][r][c] = static_cast<unsigned short>(i << 8 | r << 4 | c);
  for (int k = 0; k < kKinds; ++k) {  // every encoding round-trips: the reference multiplies what the GPU gets
    const int K = k <= kBF16 ? 16 : 32, bytes = k <= kBF16 ? 2 : 1;
    for (int m = 0; m < 16; ++m)
      for (int j = 0; j < K; ++j)
        if (decode(k, h.a[k][m][j * bytes], bytes == 2 ? h.a[k][m][j * bytes + 1] : 0) != float(av[k][m][j])) {
          printf("the %s encoding of %d does not round-trip\n", k == kF16 ? "f16" : "8-bit", av[k][m][j]);
          return 1;
        }
  }

  Problem* dp;
  Result* dr;
  CHECK(cudaMalloc(&dp, sizeof(Problem)));
  CHECK(cudaMalloc(&dr, sizeof(Result)));
  CHECK(cudaMemcpy(dp, &h, sizeof(Problem), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(dr, 0, sizeof(Result)));
  every_wrapper<<<1, 32>>>(dp, dr);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(&res, dr, sizeof(Result), cudaMemcpyDeviceToHost));

  const char* names[kKinds] = {"f16", "bf16", "s8", "e4m3", "e5m2"};
  int wrong_total = 0;
  for (int k = 0; k < kKinds; ++k) {
    if (k >= kE4M3 && !res.fp8_ran) {
      printf("mma %s: not run (compiled for an arch before sm_89)\n", names[k]);
      continue;
    }
    const int K = k <= kBF16 ? 16 : 32;
    int wrong = 0;
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 8; ++n) {
        long long s = k == kS8 ? h.ci[m][n] : (long long)h.c[m][n];
        for (int j = 0; j < K; ++j) s += (long long)av[k][m][j] * bv[k][j][n];
        int got_i;
        memcpy(&got_i, &res.d[k][m][n], 4);
        const bool ok = k == kS8 ? got_i == s : res.d[k][m][n] == float(s);
        if (!ok && wrong++ < 3) printf("  mma %s D[%d][%d]: got %g, expected %lld\n", names[k], m, n, k == kS8 ? got_i : res.d[k][m][n], s);
      }
    printf("mma %s m16n8k%d: %d of 128 wrong\n", names[k], K, wrong);
    wrong_total += wrong;
  }
  auto enc = [](int i, int r, int c) { return unsigned(i << 8 | r << 4 | c); };
  int ld_wrong = 0, mov_wrong = 0;
  for (int v = 0; v < 6; ++v) {
    const int n = v % 3 == 0 ? 1 : v % 3 == 1 ? 2 : 4;
    const bool trans = v >= 3;
    for (int l = 0; l < 32; ++l)
      for (int i = 0; i < n; ++i) {
        const int g = l / 4, t2 = 2 * (l % 4);
        const unsigned want = trans ? enc(i, t2, g) | enc(i, t2 + 1, g) << 16 : enc(i, g, t2) | enc(i, g, t2 + 1) << 16;
        ld_wrong += res.ld[v][l][i] != want;
      }
  }
  for (int l = 0; l < 32; ++l) mov_wrong += res.mov[l] != (enc(0, 2 * (l % 4), l / 4) | enc(0, 2 * (l % 4) + 1, l / 4) << 16);
  printf("ldmatrix x1/x2/x4 and .trans: %d registers wrong; movmatrix: %d lanes wrong\n", ld_wrong, mov_wrong);
  int lop_wrong = 0;
  for (int l = 0; l < 32; ++l) {
    const unsigned x = enc(0, l / 4, 2 * (l % 4)) | enc(0, l / 4, 2 * (l % 4) + 1) << 16;  // ldmatrix_x1's register
    lop_wrong += res.lop[0][l] != (((x * 2654435761u) & 0x000f000fu) | 0x64006400u);
    lop_wrong += res.lop[1][l] != (x ^ (x * 40503u) ^ (~x >> 3));
  }
  printf("lop3 (a & b) | c and a ^ b ^ c: %d words wrong\n", lop_wrong);
  wrong_total += ld_wrong + mov_wrong + lop_wrong;
  CHECK(cudaFree(dp));
  CHECK(cudaFree(dr));
  if (wrong_total == 0) printf("ptx wrappers: all checks passed\n");
  else printf("ptx wrappers: %d values wrong\n", wrong_total);
  return wrong_total == 0 ? 0 : 1;
}
