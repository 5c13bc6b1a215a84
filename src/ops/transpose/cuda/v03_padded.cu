// transpose v03: the v02 tile with one padding column, tile[32][33]: a column of the tile now
// steps 33 words, so its 32 elements sit in 32 different banks. The 32-way bank conflict of
// the column read is gone (for 4-byte elements) at the price of 32 unused words per tile.
#include "ops/gpu_rung.h"

namespace kl::KL_TARGET {

namespace {
constexpr int kTile = 32, kRows = 8;  // a 32x8 block moves a 32x32 tile, 4 elements per thread

template <class E>
__global__ void transpose_padded(const E* __restrict__ x, E* __restrict__ y, int rows, int cols) {
  __shared__ E tile[kTile][kTile + 1];  // the +1: element (r, c) at word 33r + c, bank (r + c) % 32
  const int j0 = blockIdx.x * kTile, i0 = blockIdx.y * kTile;
  for (int r = threadIdx.y; r < kTile; r += kRows) {
    const int i = i0 + r, j = j0 + threadIdx.x;
    if (i < rows && j < cols) tile[r][threadIdx.x] = x[static_cast<int64_t>(i) * cols + j];
  }
  __syncthreads();
  for (int r = threadIdx.y; r < kTile; r += kRows) {
    const int j = j0 + r, i = i0 + threadIdx.x;  // row j of y, column i
    if (i < rows && j < cols) y[static_cast<int64_t>(j) * rows + i] = tile[threadIdx.x][r];
  }
}

template <class E> void run(const Problem& p, const Args& a) {
  const int rows = static_cast<int>(p.dim("rows")), cols = static_cast<int>(p.dim("cols"));
  const dim3 grid((cols + kTile - 1) / kTile, (rows + kTile - 1) / kTile);
  KL_LAUNCH(transpose_padded<E>, grid, dim3(kTile, kRows), 0, a.stream, static_cast<const E*>(a.in[0].data()),
            static_cast<E*>(a.out[0].data()), rows, cols);
}
}  // namespace

void transpose_v03_padded(const Problem& p, const Args& a) {
  if (dtype_bits(p.dtype) == 32) run<uint32_t>(p, a);
  else run<uint16_t>(p, a);
}

}  // namespace kl::KL_TARGET
