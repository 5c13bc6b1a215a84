// transpose v03: the v02 tile with one padding column, tile[32][33]: a column of the tile now
// steps 33 words, so its 32 elements sit in 32 different banks. The 32-way bank conflict of
// the column read is gone (for 4-byte elements) at the price of 32 unused words per tile.
#include "ops/transpose/cuda/tile.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
// Element (r, c) at word 33r + c: bank (r + c) % 32, all different down a column.
struct Padded {
  static constexpr int kWidth = transpose_tile::kTile + 1;
  __device__ static int slot(int, int c) { return c; }
};

template <int kRows> RungConfig<TransposeParams> config() {
  return transpose_tile::config<Padded, kRows>({"bar.sync", "st.shared", "ld.shared"}, {"BAR.SYNC", "STS", "LDS"});
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<TransposeParams> r{.op = "transpose",
                          .name = "cuda_padded",
                          .note = "the tile padded to 32x33 words: a tile column spans 32 banks, so the column read is conflict-free (4-byte elements)",
                          .configs = {config<8>(), config<4>()}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
