// The block tile of the mma.sync gemm rungs (v09, v10): 128x128x32 in shared memory as 16-byte
// chunks with an XOR swizzle, eight warps each computing 64x32 of D with mma.sync m16n8k16 on
// fragments that ldmatrix loads. The swizzle moves chunk c of row r so that the eight row
// addresses of every ldmatrix phase, and the eight chunks of every 16-byte store phase, fall
// in eight different 16-byte bank groups:
//   A (128 rows of 64 bytes, 4 chunks):   c ^ ((r >> 1) & 3)  (rows r, r+1 fill one 128-byte line)
//   B (32 rows of 256 bytes, 16 chunks):  c ^ (r & 7)
// Unswizzled, an ldmatrix of A would read 8 rows 64 bytes apart (2-way conflict) and one of B
// 8 rows 256 bytes apart (8-way: every row in the same banks).
#pragma once
#include "cuda/ptx.h"
#include "ops/gemm/cuda/tensor_core.cuh"

namespace kl::KL_TARGET::gemm_mma {

using gemm_tc::Chunk;
using gemm_tc::Operands;

constexpr int kBM = 128, kBN = 128, kBK = 32;
constexpr int kWM = 64, kWN = 32;                       // warp tile: 2 x 4 warps
constexpr int kWarps = (kBM / kWM) * (kBN / kWN), kThreads = kWarps * 32;  // 8, 256
constexpr int kTilesM = kWM / 16, kTilesN = kWN / 8;    // mma tiles per warp tile: 4 x 4
constexpr int kChunksA = kBK / 8, kChunksB = kBN / 8;   // 16-byte chunks per row: 4, 16
constexpr int kLoads = kBM * kChunksA / kThreads;       // chunks of A (and of B) per thread per tile: 2
static_assert(kBK * kChunksB / kThreads == kLoads, "as many B chunks as A chunks");

struct alignas(128) Stage {
  Chunk a[kBM][kChunksA];  // A(row0 + r, l0 + 8c ..) at a[r][swizzle_a(r, c)]
  Chunk b[kBK][kChunksB];  // B(l0 + r, col0 + 8c ..) at b[r][swizzle_b(r, c)]
};

__device__ __forceinline__ int swizzle_a(int r, int c) { return c ^ ((r >> 1) & 3); }
__device__ __forceinline__ int swizzle_b(int r, int c) { return c ^ (r & 7); }

// Thread t's q-th chunk of the A and B tiles: (row, chunk) within the tile.
__device__ __forceinline__ int a_row(int t, int q) { return (t + q * kThreads) / kChunksA; }
__device__ __forceinline__ int a_chunk(int t, int q) { return (t + q * kThreads) % kChunksA; }
__device__ __forceinline__ int b_row(int t, int q) { return (t + q * kThreads) / kChunksB; }
__device__ __forceinline__ int b_chunk(int t, int q) { return (t + q * kThreads) % kChunksB; }

template <class T>
__device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  if constexpr (std::is_same_v<T, __half>) kl::ptx::mma_m16n8k16_f16_f32(d, a, b, d);
  else kl::ptx::mma_m16n8k16_bf16_f32(d, a, b, d);
}

// acc += the warp's 64x32 of A_tile * B_tile over the stage's 32 k: per k16 step, four
// ldmatrix.x4 of A (one 16x16 fragment each), two ldmatrix.x4.trans of B (two 16x8 each), 16 mma.
template <class T>
__device__ __forceinline__ void warp_tile_mma(const Stage& s, int wrow, int wcol, float (&acc)[kTilesM][kTilesN][4]) {
  const int lane = threadIdx.x % 32;
  // ldmatrix.x4: lanes 0-7 give rows 0-7 of the first 8x8 matrix, 8-15 rows 8-15, 16-23 rows 0-7
  // of the next 8 columns, 24-31 rows 8-15 of them: the fragment order of mma's A and of two B's.
  const int lrow = lane % 8 + 8 * ((lane / 8) % 2), lchunk = lane / 16;
  KL_UNROLL
  for (int kk = 0; kk < kBK; kk += 16) {
    uint32_t a[kTilesM][4], b[kTilesN][2];
    KL_UNROLL
    for (int i = 0; i < kTilesM; ++i) {
      const int r = wrow + 16 * i + lrow, c = kk / 8 + lchunk;
      kl::ptx::ldmatrix_x4(a[i], &s.a[r][swizzle_a(r, c)]);
    }
    KL_UNROLL
    for (int j = 0; j < kTilesN; j += 2) {
      const int r = kk + lrow, c = (wcol + 8 * j) / 8 + lchunk;
      uint32_t x[4];
      kl::ptx::ldmatrix_x4_trans(x, &s.b[r][swizzle_b(r, c)]);
      b[j][0] = x[0], b[j][1] = x[1], b[j + 1][0] = x[2], b[j + 1][1] = x[3];
    }
    KL_UNROLL
    for (int i = 0; i < kTilesM; ++i)
      KL_UNROLL
      for (int j = 0; j < kTilesN; ++j) mma<T>(acc[i][j], a[i], b[j]);
  }
}

// The warp's accumulators into D: fragment element (g + 8h, 2t + e) of tile (i, j), pairs of
// adjacent columns as one 4-byte store.
template <class T>
__device__ __forceinline__ void store_warp_tile(const Operands<T>& o, int i0, int j0, const float (&acc)[kTilesM][kTilesN][4]) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  KL_UNROLL
  for (int i = 0; i < kTilesM; ++i)
    KL_UNROLL
    for (int j = 0; j < kTilesN; ++j) {
      const int r = i0 + 16 * i + g, c = j0 + 8 * j + 2 * t;
      gemm_tc::store_pair(o, r, c, acc[i][j][0], acc[i][j][1]);
      gemm_tc::store_pair(o, r + 8, c, acc[i][j][2], acc[i][j][3]);
    }
}

}  // namespace kl::KL_TARGET::gemm_mma
