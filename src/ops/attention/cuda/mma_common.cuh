// What the mma.sync attention rungs (forward v03, backward v13) share: 16-byte chunks in XOR-swizzled
// shared-memory tiles, cp.async tile loads, the m16n8k16 product in fp16 or bf16, and accumulator
// fragments staged through shared memory so that rows leave in whole 16-byte stores.
#pragma once
#include <cstring>
#include <type_traits>

#include "cuda/ptx.h"
#include "ops/attention/cuda/attention_common.cuh"

namespace kl::KL_TARGET::attention {

struct alignas(16) Chunk {  // 8 halves
  uint32_t w[4];
};

// Chunk c of row r sits at c ^ (r & 7): a row is a multiple of 128 bytes (d % 64 == 0), so the 8
// rows an ldmatrix phase reads, and the 8 chunks a store phase writes, fall in 8 different bank groups.
__device__ __forceinline__ int swz(int r, int c) { return c ^ (r & 7); }

// D += A B on tensor cores (m16n8k16, fp32 accumulators).
template <class E> __device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  if constexpr (std::is_same_v<E, __half>) kl::ptx::mma_m16n8k16_f16_f32(d, a, b, d);
  else kl::ptx::mma_m16n8k16_bf16_f32(d, a, b, d);
}

// The A fragments of one k16 step from the accumulators of two adjacent n8 tiles (rows gid and
// gid + 8, columns 2 tid and 2 tid + 1 of each): the same lanes hold the same elements.
template <class E> __device__ __forceinline__ void a_from_accumulators(uint32_t (&a)[4], const float (&lo)[4], const float (&hi)[4]) {
  a[0] = pack_pair<E>(lo[0], lo[1]), a[1] = pack_pair<E>(lo[2], lo[3]);
  a[2] = pack_pair<E>(hi[0], hi[1]), a[3] = pack_pair<E>(hi[2], hi[3]);
}

// `rows` rows of `chunks` chunks from global rows `stride` elements apart into a swizzled tile, by
// the block's kThreads threads; rows at or past `valid` are zero-filled.
template <int kThreads, class E>
__device__ __forceinline__ void load_rows(Chunk* tile, const E* __restrict__ src, int64_t stride, int rows, int chunks, int valid) {
  for (int e = threadIdx.x; e < rows * chunks; e += kThreads) {
    const int r = e / chunks, c = e % chunks;
    Chunk* dst = tile + r * chunks + swz(r, c);
    if (r < valid) kl::ptx::cp_async_16(dst, src + r * stride + 8 * c);
    else *dst = Chunk{};
  }
}

// A warp's 16 x 8N accumulators, times mul[0] (row gid) and mul[1] (row gid + 8), into the
// swizzled rows `tile` (16 rows of `chunks` chunks that no other warp touches).
template <class E, int N>
__device__ __forceinline__ void stage_fragments(Chunk* tile, int chunks, const float (&acc)[N][4], const float (&mul)[2]) {
  const int lane = threadIdx.x % 32, gid = lane / 4, tid = lane % 4;
  KL_UNROLL
  for (int hf = 0; hf < 2; ++hf) {
    const int r = gid + 8 * hf;
    KL_UNROLL
    for (int n = 0; n < N; ++n) {
      const uint32_t pair = pack_pair<E>(acc[n][2 * hf] * mul[hf], acc[n][2 * hf + 1] * mul[hf]);
      memcpy(reinterpret_cast<char*>(&tile[r * chunks + swz(r, n)]) + 4 * tid, &pair, sizeof(pair));
    }
  }
}

// The warp stores the first `chunks` chunks of `rows` (at most 16) staged rows, `tile_chunks` apart,
// to global rows `stride` elements apart: whole 16-byte chunks, or elements when dst is off 16-byte
// boundaries (a view).
template <class E>
__device__ __forceinline__ void store_rows(const Chunk* tile, int tile_chunks, int chunks, E* dst, int64_t stride, int rows) {
  const bool whole_chunks = reinterpret_cast<uintptr_t>(dst) % 16 == 0 && stride % 8 == 0;
  for (int e = threadIdx.x % 32; e < rows * chunks; e += 32) {
    const int r = e / chunks, c = e % chunks;
    const Chunk chunk = tile[r * tile_chunks + swz(r, c)];
    E* at = dst + r * stride + 8 * c;
    if (whole_chunks) {
      *reinterpret_cast<Chunk*>(at) = chunk;
    } else {
      E x[8];
      memcpy(static_cast<void*>(x), &chunk, sizeof(chunk));
      KL_UNROLL
      for (int i = 0; i < 8; ++i) at[i] = x[i];
    }
  }
}

}  // namespace kl::KL_TARGET::attention
