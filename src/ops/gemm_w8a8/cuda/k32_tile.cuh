// The block tile of the 8-bit mma.sync rungs (gemm_w8a8 int8, gemm_fp8 e4m3): 128 rows of A (m x k)
// and 128 rows of W (n x k), both k-contiguous, 64 bytes of k per stage, in shared memory as 16-byte
// chunks with an XOR swizzle; eight warps each compute 64x32 of D with mma.sync m16n8k32.
//
// Fragments (PTX ISA, m16n8k32 with 8-bit types; g = lane/4, t = lane%4, 4 bytes a register):
//   A (16x32): a0 = A[g][4t..4t+3], a1 = A[g+8][4t..], a2 = A[g][16+4t..], a3 = A[g+8][16+4t..]
//   B (32x8, col): b0 = B[4t..4t+3][g], b1 = B[16+4t..][g], and B[k][n] = W[n][k]
// ldmatrix's b16 8x8 matrix is 8 rows of 16 bytes, lane l getting row l/4, bytes 4(l%4)..+3: so an
// 8x16 int8 matrix of A rows (or W rows) lands as exactly these registers; one .x4 gives a whole A
// fragment, or the two B fragments of 16 W rows. W needs no transpose: its rows are B's columns.
//
// Swizzle: chunk c of row r at c ^ ((r >> 1) & 3). Rows are 64 bytes, two to a 128-byte line; the
// eight row addresses of an ldmatrix phase (rows r..r+7, one chunk) then fall in eight different
// 16-byte bank groups, and so do the eight chunks of a 16-byte store phase.
#pragma once
#include <cstdint>

#include "cuda/ptx.h"
#include "ops/gpu_rung.h"

namespace kl::KL_TARGET::k32_tile {

constexpr int kBM = 128, kBN = 128, kBK = 64;  // kBK in bytes, one 8-bit element each
constexpr int kWM = 64, kWN = 32;              // warp tile: 2 x 4 warps
constexpr int kWarps = (kBM / kWM) * (kBN / kWN), kThreads = kWarps * 32;  // 8, 256
constexpr int kTilesM = kWM / 16, kTilesN = kWN / 8;                        // mma tiles per warp: 4 x 4
constexpr int kChunks = kBK / 16;                                            // per row: 4
constexpr int kLoads = kBM * kChunks / kThreads;                             // chunks per thread per operand: 2
constexpr int kStages = 4;  // as gemm v10: three tiles in flight while one is multiplied
static_assert(kBM == kBN, "A and W tiles share one shape");

struct alignas(16) Chunk {
  uint32_t w[4];
};
struct alignas(128) Stage {
  Chunk a[kBM][kChunks];  // A(row0 + r, l0 + 16c ..) at a[r][swizzle(r, c)]
  Chunk w[kBN][kChunks];  // W(col0 + r, l0 + 16c ..) at w[r][swizzle(r, c)]
};
constexpr int kSmem = kStages * static_cast<int>(sizeof(Stage));  // 64 KB of dynamic shared memory

__device__ __forceinline__ int swizzle(int r, int c) { return c ^ ((r >> 1) & 3); }

// The 8-bit operands: row-major, k a multiple of 16 so every chunk is whole and 16-byte aligned.
struct Operands {
  const uint8_t* __restrict__ a;
  const uint8_t* __restrict__ w;
  int m, n, k;
};

// Rows [row0, row0 + 128) of x (rows x k bytes), bytes [l0, l0 + 64) of each, by cp.async; chunks past
// the matrix are stored as zeros by the thread itself (zeros add nothing to the sums).
__device__ __forceinline__ void load_tile(Chunk (&tile)[kBM][kChunks], const uint8_t* __restrict__ x, int rows, int k,
                                          int row0, int l0) {
  KL_UNROLL
  for (int q = 0; q < kLoads; ++q) {
    const int at = threadIdx.x + q * kThreads, r = at / kChunks, c = at % kChunks, row = row0 + r, col = l0 + 16 * c;
    Chunk* dst = &tile[r][swizzle(r, c)];
    if (row < rows && col < k) kl::ptx::cp_async_16(dst, x + static_cast<int64_t>(row) * k + col);
    else *dst = Chunk{};
  }
}

__device__ __forceinline__ void load_stage(Stage& s, const Operands& o, int row0, int col0, int l0) {
  load_tile(s.a, o.a, o.m, o.k, row0, l0);
  load_tile(s.w, o.w, o.n, o.k, col0, l0);
}

// acc += the warp's 64x32 of A_tile W_tile^T over the stage's 64 k: per k32 step, two ldmatrix.x4 of W
// (two fragments each), then per 16 rows one ldmatrix.x4 of A (a fragment) and its four mma; an A
// fragment lives only through its row of mma, which keeps fp8's two accumulator sets in registers.
template <class Acc, class Mma>
__device__ __forceinline__ void warp_tile_mma(const Stage& s, int wrow, int wcol, Acc (&acc)[kTilesM][kTilesN][4], Mma mma) {
  const int lane = threadIdx.x % 32;
  // A: lanes 0-7 rows 0-7, 8-15 rows 8-15 (k bytes 0-15), 16-31 the same rows at k bytes 16-31.
  const int arow = lane % 8 + 8 * ((lane / 8) % 2), achunk = lane / 16;
  // W: lanes 0-7 rows 0-7 at k bytes 0-15, 8-15 the same rows at 16-31, 16-31 rows 8-15 likewise.
  const int wrow_lane = lane % 8 + 8 * (lane / 16), wchunk = (lane / 8) % 2;
  KL_UNROLL
  for (int kc = 0; kc < kChunks; kc += 2) {
    uint32_t b[kTilesN][2];
    KL_UNROLL
    for (int j = 0; j < kTilesN; j += 2) {
      const int r = wcol + 8 * j + wrow_lane, c = kc + wchunk;
      uint32_t x[4];
      kl::ptx::ldmatrix_x4(x, &s.w[r][swizzle(r, c)]);
      b[j][0] = x[0], b[j][1] = x[1], b[j + 1][0] = x[2], b[j + 1][1] = x[3];
    }
    KL_UNROLL
    for (int i = 0; i < kTilesM; ++i) {
      const int r = wrow + 16 * i + arow, c = kc + achunk;
      uint32_t a[4];
      kl::ptx::ldmatrix_x4(a, &s.a[r][swizzle(r, c)]);
      KL_UNROLL
      for (int j = 0; j < kTilesN; ++j) mma(acc[i][j], a, b[j]);
    }
  }
}

// total += scale(i, h) * (the warp's 64x32 of A_tile W_tile^T over the stage's 64 k), where each
// accumulator's two k32 mma first sum into a fresh fp32 fragment: promotion once per stage. Only that
// 4-register fragment lives beside the totals, so the fp8 rung's two sets of sums fit in registers.
template <class Mma, class Scale>
__device__ __forceinline__ void warp_tile_mma_promoted(const Stage& s, int wrow, int wcol, float (&total)[kTilesM][kTilesN][4],
                                                       Mma mma, Scale scale) {
  const int lane = threadIdx.x % 32;
  const int arow = lane % 8 + 8 * ((lane / 8) % 2), achunk = lane / 16;  // as warp_tile_mma
  const int wrow_lane = lane % 8 + 8 * (lane / 16), wchunk = (lane / 8) % 2;
  uint32_t b[kChunks / 2][kTilesN][2];
  KL_UNROLL
  for (int ks = 0; ks < kChunks / 2; ++ks)
    KL_UNROLL
    for (int j = 0; j < kTilesN; j += 2) {
      const int r = wcol + 8 * j + wrow_lane, c = 2 * ks + wchunk;
      uint32_t x[4];
      kl::ptx::ldmatrix_x4(x, &s.w[r][swizzle(r, c)]);
      b[ks][j][0] = x[0], b[ks][j][1] = x[1], b[ks][j + 1][0] = x[2], b[ks][j + 1][1] = x[3];
    }
  KL_UNROLL
  for (int i = 0; i < kTilesM; ++i) {
    uint32_t a[kChunks / 2][4];
    KL_UNROLL
    for (int ks = 0; ks < kChunks / 2; ++ks) {
      const int r = wrow + 16 * i + arow, c = 2 * ks + achunk;
      kl::ptx::ldmatrix_x4(a[ks], &s.a[r][swizzle(r, c)]);
    }
    KL_UNROLL
    for (int j = 0; j < kTilesN; ++j) {
      float part[4] = {};
      KL_UNROLL
      for (int ks = 0; ks < kChunks / 2; ++ks) mma(part, a[ks], b[ks][j]);
      KL_UNROLL
      for (int e = 0; e < 4; ++e) total[i][j][e] += part[e] * scale(i, e / 2);
    }
  }
}

// The k tiles [0, tiles) through a ring of kStages stages: tile kt + 3 is copied while tile kt is
// handed to on_tile(stage, kt), which multiplies it (and may fold partial sums).
template <class OnTile>
__device__ __forceinline__ void mainloop(Stage* stages, const Operands& o, int row0, int col0, int tiles, OnTile on_tile) {
  // One commit group per tile, empty ones included, so "all but the newest kStages-2 groups landed"
  // always means "tile kt landed".
  KL_UNROLL
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < tiles) load_stage(stages[s], o, row0, col0, s * kBK);
    kl::ptx::cp_async_commit();
  }
  for (int kt = 0; kt < tiles; ++kt) {
    kl::ptx::cp_async_wait<kStages - 2>();
    __syncthreads();  // tile kt is in for every thread, and the stage read before it is free
    const int next = kt + kStages - 1;
    if (next < tiles) load_stage(stages[next % kStages], o, row0, col0, next * kBK);
    kl::ptx::cp_async_commit();
    on_tile(stages[kt % kStages], kt);
  }
}

// Calls f(i, j, h, row, col) for each accumulator pair of the warp's tile: acc[i][j][2h], acc[i][j][2h+1]
// are D(row, col) and D(row, col + 1).
template <class F> __device__ __forceinline__ void for_each_pair(int row0, int col0, F f) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  KL_UNROLL
  for (int i = 0; i < kTilesM; ++i)
    KL_UNROLL
    for (int j = 0; j < kTilesN; ++j)
      KL_UNROLL
      for (int h = 0; h < 2; ++h) f(i, j, h, row0 + 16 * i + g + 8 * h, col0 + 8 * j + 2 * t);
}

// D(row, col) and D(row, col + 1), as one 4-byte store when both are inside D, n is even and D is
// 4-byte aligned (col is even, so the pair is then aligned).
template <class T> __device__ __forceinline__ void store_pair(T* __restrict__ d, int m, int n, int row, int col, T v0, T v1) {
  if (row >= m || col >= n) return;
  T* at = d + static_cast<int64_t>(row) * n + col;
  if (col + 1 < n && n % 2 == 0 && reinterpret_cast<uintptr_t>(d) % 4 == 0) {
    struct alignas(4) Pair {
      T x, y;
    };
    *reinterpret_cast<Pair*>(at) = Pair{v0, v1};
    return;
  }
  at[0] = v0;
  if (col + 1 < n) at[1] = v1;
}

}  // namespace kl::KL_TARGET::k32_tile
