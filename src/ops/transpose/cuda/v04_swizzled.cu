// transpose v04: no padding; element (r, c) of the tile is stored at column c ^ r instead. Row
// r holds a permutation of its 32 columns, so a row write and a column read both touch 32
// distinct banks: conflict-free like v03 (for 4-byte elements), with no wasted shared memory.
#include "ops/transpose/cuda/tile.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
static_assert((transpose_tile::kTile & (transpose_tile::kTile - 1)) == 0,
              "the XOR swizzle needs a power-of-2 tile: c ^ r stays in [0, kTile)");
// Element (r, c) at word 32r + (c ^ r): bank c ^ r, a permutation of the banks down a column.
struct Swizzled {
  static constexpr int kWidth = transpose_tile::kTile;
  __device__ static int slot(int r, int c) { return c ^ r; }
};

template <int kRows> RungConfig<TransposeParams> config() {
  return transpose_tile::config<Swizzled, kRows>({"bar.sync", "st.shared", "ld.shared"}, {"BAR.SYNC", "STS", "LDS"});
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<TransposeParams> r{.op = "transpose",
                          .name = "cuda_swizzled",
                          .note = "column c of tile row r stored at c ^ r instead of padding: conflict-free like the padded tile, with no wasted shared memory",
                          .configs = {config<8>(), config<4>()}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
