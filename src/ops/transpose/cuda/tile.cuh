// What transpose v02-v04 share: a 32xkRows block moves a 32x32 tile of x through shared memory,
// reading rows of x and writing rows of y, both coalesced. The rungs differ only in where
// element (r, c) of the tile lives in shared memory, their Layout: kWidth words per tile row,
// and slot(r, c), the word of row r that holds column c. kRows (8 or 4: each thread moves
// 32 / kRows elements) is the rungs' configs.
#pragma once
#include <cstdint>
#include <string>

#include "ops/transpose/cuda/elements.cuh"

namespace kl::KL_TARGET::transpose_tile {

// Internal linkage: a kernel's host stub is local to each object, so a shared launcher must be too,
// or the linker keeps one object's copy and the others launch a stub their rung does not declare.
namespace {

constexpr int kTile = 32;

template <int B, class Layout, int kRows>
__global__ void __launch_bounds__(kTile * kRows)
    through_tile(const transpose_raw::Word<B>* __restrict__ x, transpose_raw::Word<B>* __restrict__ y, int rows, int cols) {
  using E = transpose_raw::Word<B>;
  KL_SHARED(E, tile, [kTile][Layout::kWidth]);
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

template <int B, class Layout, int kRows> void launch(const TransposeParams& p, const Args& a) {
  using E = transpose_raw::Word<B>;
  const int rows = static_cast<int>(p.rows), cols = static_cast<int>(p.cols);
  const dim3 grid((cols + kTile - 1) / kTile, (rows + kTile - 1) / kTile);
  KL_LAUNCH((through_tile<B, Layout, kRows>), grid, dim3(kTile, kRows), 0, a.stream, static_cast<const E*>(a.in[0].data()),
            static_cast<E*>(a.out[0].data()), rows, cols);
}

// The tile kernel with this layout, on 4-byte or 2-byte elements (moved as raw bits).
template <class Layout, int kRows> void run(const TransposeParams& p, const Args& a) {
  transpose_raw::with_bytes(p, [&](auto b) { launch<decltype(b)::value, Layout, kRows>(p, a); });
}

// A config of a tile rung: kRows rows of kTile threads, every kernel it launches (both element
// sizes) in one group with the rung's claims.
template <class Layout, int kRows>
RungConfig<TransposeParams> config(std::vector<std::string> ptx, std::vector<std::string> sass) {
  return {.name = std::to_string(kTile) + "x" + std::to_string(kRows) + "_threads",
          .threads = kTile * kRows,
          .kernels = {{transpose_raw::for_sizes([](auto b) { return KL_KERNEL(through_tile<decltype(b)::value, Layout, kRows>); }),
                       std::move(ptx), std::move(sass)}},
          .run = run<Layout, kRows>};
}

}  // namespace

}  // namespace kl::KL_TARGET::transpose_tile
