// The main loop of the cp.async gemm rungs (v10, v13): mma_tile.cuh's 128x128x32 block tile fed
// by a ring of kStages shared-memory stages. Tile k+3 is copied global -> shared (cp.async.cg,
// 16 bytes, no registers) while the warps multiply tile k. Chunks that run past the matrix, or
// rows whose length is not a multiple of 8 (not 16-byte aligned), are stored by the thread
// itself, zero-filled.
#pragma once
#include "ops/gemm/cuda/mma_tile.cuh"

namespace kl::KL_TARGET::gemm_mma {

constexpr int kStages = 4;
constexpr int kPipelineSmem = kStages * static_cast<int>(sizeof(Stage));  // 64 KB of dynamic shared memory

template <class T>
__device__ __forceinline__ void load_stage(Stage& s, const Operands<T>& o, int row0, int col0, int l0) {
  const int t = threadIdx.x;
  const bool a_vec = o.k % 8 == 0, b_vec = o.n % 8 == 0;
  KL_UNROLL
  for (int q = 0; q < kLoads; ++q) {
    const int ra = a_row(t, q), ca = a_chunk(t, q), i = row0 + ra, a_left = i < o.m ? o.k - (l0 + 8 * ca) : 0;
    const int rb = b_row(t, q), cb = b_chunk(t, q), l = l0 + rb, b_left = l < o.k ? o.n - (col0 + 8 * cb) : 0;
    const int64_t a_at = static_cast<int64_t>(i) * o.k + l0 + 8 * ca, b_at = static_cast<int64_t>(l) * o.n + col0 + 8 * cb;
    Chunk* a_dst = &s.a[ra][swizzle_a(ra, ca)];
    Chunk* b_dst = &s.b[rb][swizzle_b(rb, cb)];
    if (a_vec && a_left > 0) kl::ptx::cp_async_16(a_dst, o.a + a_at);
    else *a_dst = gemm_tc::load_chunk(o.a, a_at, a_left, false);
    if (b_vec && b_left > 0) kl::ptx::cp_async_16(b_dst, o.b + b_at);
    else *b_dst = gemm_tc::load_chunk(o.b, b_at, b_left, false);
  }
}

// acc += this warp's part of A(row0.., k tiles [t0, t1)) B(.., col0..).
template <class T>
__device__ __forceinline__ void cp_async_mainloop(Stage* stages, const Operands<T>& o, int row0, int col0, int t0, int t1,
                                                  float (&acc)[kTilesM][kTilesN][4]) {
  const int warp = threadIdx.x / 32;
  const int wrow = (warp / (kBN / kWN)) * kWM, wcol = (warp % (kBN / kWN)) * kWN;
  // One commit group per tile, empty ones included, so "all but the newest kStages-2 groups
  // landed" always means "tile kt landed".
  KL_UNROLL
  for (int s = 0; s < kStages - 1; ++s) {
    if (t0 + s < t1) load_stage(stages[s], o, row0, col0, (t0 + s) * kBK);
    kl::ptx::cp_async_commit();
  }
  for (int kt = t0; kt < t1; ++kt) {
    kl::ptx::cp_async_wait<kStages - 2>();
    __syncthreads();  // tile kt is in for every thread, and the stage read before it is free
    const int next = kt + kStages - 1;
    if (next < t1) load_stage(stages[(next - t0) % kStages], o, row0, col0, next * kBK);
    kl::ptx::cp_async_commit();
    warp_tile_mma<T>(stages[(kt - t0) % kStages], wrow, wcol, acc);
  }
}

}  // namespace kl::KL_TARGET::gemm_mma
