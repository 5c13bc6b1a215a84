// transpose v02: a 32x32 tile goes through shared memory so both the global read and the
// global write are coalesced; the tile is read down a column, so the 32 threads of a warp hit
// one shared-memory bank (a 32-way bank conflict for 4-byte elements).
#include "ops/transpose/cuda/tile.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
// Element (r, c) at word 32r + c: every element of a column is in bank c.
struct Plain {
  static constexpr int kWidth = transpose_tile::kTile;
  __device__ static int slot(int, int c) { return c; }
};

template <int kRows> RungConfig<TransposeParams> config() {
  return transpose_tile::config<Plain, kRows>({"bar.sync", "st.shared", "ld.shared"}, {"BAR.SYNC", "STS", "LDS"});
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<TransposeParams> r{.op = "transpose",
                          .name = "cuda_smem",
                          .note = "a 32x32 tile through shared memory: global reads and writes both coalesced, but the column read of the tile is a 32-way bank conflict",
                          .configs = {config<8>(), config<4>()}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
