// What transpose v02-v04 share: a 32x8 block moves a 32x32 tile of x through shared memory,
// reading rows of x and writing rows of y, both coalesced. The rungs differ only in where
// element (r, c) of the tile lives in shared memory, their Layout: kWidth words per tile row,
// and slot(r, c), the word of row r that holds column c.
#pragma once
#include <cstdint>

#include "ops/gpu_rung.h"

namespace kl::KL_TARGET::transpose_tile {

constexpr int kTile = 32, kRows = 8;  // 4 elements per thread

template <class E, class Layout>
__global__ void __launch_bounds__(kTile * kRows) through_tile(const E* __restrict__ x, E* __restrict__ y, int rows, int cols) {
  __shared__ E tile[kTile][Layout::kWidth];
  const int j0 = blockIdx.x * kTile, i0 = blockIdx.y * kTile;
  for (int r = threadIdx.y; r < kTile; r += kRows) {
    const int i = i0 + r, j = j0 + threadIdx.x;
    if (i < rows && j < cols) tile[r][Layout::slot(r, threadIdx.x)] = x[static_cast<int64_t>(i) * cols + j];
  }
  __syncthreads();
  for (int r = threadIdx.y; r < kTile; r += kRows) {
    const int j = j0 + r, i = i0 + threadIdx.x;  // row j of y, column i: element (threadIdx.x, r) of the tile
    if (i < rows && j < cols) y[static_cast<int64_t>(j) * rows + i] = tile[threadIdx.x][Layout::slot(threadIdx.x, r)];
  }
}

template <class E, class Layout> void launch(const Problem& p, const Args& a) {
  const int rows = static_cast<int>(p.dim("rows")), cols = static_cast<int>(p.dim("cols"));
  const dim3 grid((cols + kTile - 1) / kTile, (rows + kTile - 1) / kTile);
  KL_LAUNCH((through_tile<E, Layout>), grid, dim3(kTile, kRows), 0, a.stream, static_cast<const E*>(a.in[0].data()),
            static_cast<E*>(a.out[0].data()), rows, cols);
}

// The tile kernel with this layout, on 4-byte or 2-byte elements (moved as raw bits).
template <class Layout> void run(const Problem& p, const Args& a) {
  if (dtype_bits(p.dtype) == 32) launch<uint32_t, Layout>(p, a);
  else launch<uint16_t, Layout>(p, a);
}

}  // namespace kl::KL_TARGET::transpose_tile
