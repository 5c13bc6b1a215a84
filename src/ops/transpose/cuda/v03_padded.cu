// transpose v03: the v02 tile with one padding column, tile[32][33]: a column of the tile now
// steps 33 words, so its 32 elements sit in 32 different banks. The 32-way bank conflict of
// the column read is gone (for 4-byte elements) at the price of 32 unused words per tile.
#include "ops/transpose/cuda/tile.cuh"

namespace kl::KL_TARGET {

namespace {
// Element (r, c) at word 33r + c: bank (r + c) % 32, all different down a column.
struct Padded {
  static constexpr int kWidth = transpose_tile::kTile + 1;
  __device__ static int slot(int, int c) { return c; }
};
}  // namespace

void transpose_v03_padded(const Problem& p, const Args& a) { transpose_tile::run<Padded>(p, a); }

}  // namespace kl::KL_TARGET
