// transpose v04: no padding; element (r, c) of the tile is stored at column c ^ r instead. Row
// r holds a permutation of its 32 columns, so a row write and a column read both touch 32
// distinct banks: conflict-free like v03 (for 4-byte elements), with no wasted shared memory.
#include "ops/gpu_rung.h"

namespace kl::KL_TARGET {

namespace {
constexpr int kTile = 32, kRows = 8;  // a 32x8 block moves a 32x32 tile, 4 elements per thread
static_assert((kTile & (kTile - 1)) == 0, "the XOR swizzle needs a power-of-2 tile: c ^ r stays in [0, kTile)");

template <class E>
__global__ void transpose_swizzled(const E* __restrict__ x, E* __restrict__ y, int rows, int cols) {
  __shared__ E tile[kTile][kTile];  // element (r, c) lives at tile[r][c ^ r]
  const int j0 = blockIdx.x * kTile, i0 = blockIdx.y * kTile;
  for (int r = threadIdx.y; r < kTile; r += kRows) {
    const int i = i0 + r, j = j0 + threadIdx.x;
    if (i < rows && j < cols) tile[r][threadIdx.x ^ r] = x[static_cast<int64_t>(i) * cols + j];
  }
  __syncthreads();
  for (int r = threadIdx.y; r < kTile; r += kRows) {
    const int j = j0 + r, i = i0 + threadIdx.x;  // row j of y, column i: element (threadIdx.x, r) of the tile
    if (i < rows && j < cols) y[static_cast<int64_t>(j) * rows + i] = tile[threadIdx.x][r ^ threadIdx.x];
  }
}

template <class E> void run(const Problem& p, const Args& a) {
  const int rows = static_cast<int>(p.dim("rows")), cols = static_cast<int>(p.dim("cols"));
  const dim3 grid((cols + kTile - 1) / kTile, (rows + kTile - 1) / kTile);
  KL_LAUNCH(transpose_swizzled<E>, grid, dim3(kTile, kRows), 0, a.stream, static_cast<const E*>(a.in[0].data()),
            static_cast<E*>(a.out[0].data()), rows, cols);
}
}  // namespace

void transpose_v04_swizzled(const Problem& p, const Args& a) {
  if (dtype_bits(p.dtype) == 32) run<uint32_t>(p, a);
  else run<uint16_t>(p, a);
}

}  // namespace kl::KL_TARGET
