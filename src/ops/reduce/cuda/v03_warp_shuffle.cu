// reduce v03: the tree runs in registers: __shfl_down_sync folds the 32 lanes of a warp with no
// shared memory and no barrier, then one shared slot per warp and one more warp fold (see
// block_reduce in common.cuh): 1 barrier per block instead of v02's 9. Rows of up to
// kWarpRowMax elements get one warp each instead of a whole block (no idle threads on short rows).
#include "ops/reduce/cuda/common.cuh"

namespace kl::KL_TARGET {

namespace {
using namespace reduce_cuda;

// y[blockIdx.x] = the fold of this block's share of x (see block_share).
template <class E, class Op>
__global__ void __launch_bounds__(kThreads)
    reduce_shuffle(const E* __restrict__ x, float* __restrict__ y, int64_t n, int64_t cols, bool per_row) {
  const Share share = block_share(n, cols, per_row);
  float acc = Op::identity();
  for (int64_t i = share.t; i < share.len; i += share.stride) acc = Op::apply(acc, to_float(x[share.base + i]));
  acc = block_reduce<Op>(acc);
  if (threadIdx.x == 0) y[blockIdx.x] = acc;
}

// Short rows: warp w of the grid folds row w alone; no shared memory, no barrier.
template <class E, class Op>
__global__ void __launch_bounds__(kThreads)
    reduce_rows_warp(const E* __restrict__ x, float* __restrict__ y, int64_t rows, int64_t cols) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (row >= rows) return;  // the whole warp leaves: its shuffles below still see 32 lanes
  const int lane = threadIdx.x % 32;
  float acc = Op::identity();
  for (int64_t i = lane; i < cols; i += 32) acc = Op::apply(acc, to_float(x[row * cols + i]));
  acc = warp_reduce<Op>(acc);
  if (lane == 0) y[row] = acc;
}
}  // namespace

void reduce_v03_warp_shuffle(const Problem& p, const Args& a) {
  dispatch(p, [&]<class E, class Op>() {
    const int64_t rows = p.dim("rows"), cols = p.dim("cols"), n = rows * cols;
    const auto* x = static_cast<const E*>(a.in[0].data());
    auto* y = static_cast<float*>(a.out[0].data());
    if (p.opt("over") == "rows" && cols <= kWarpRowMax) {
      const auto blocks = static_cast<unsigned>((rows + kWarps - 1) / kWarps);
      KL_LAUNCH((reduce_rows_warp<E, Op>), dim3(blocks), dim3(kThreads), 0, a.stream, x, y, rows, cols);
    } else if (p.opt("over") == "rows") {
      KL_LAUNCH((reduce_shuffle<E, Op>), dim3(static_cast<unsigned>(rows)), dim3(kThreads), 0, a.stream, x, y, n, cols, true);
    } else {
      auto* partials = static_cast<float*>(a.workspace);
      const int blocks = total_blocks(n, 1);
      KL_LAUNCH((reduce_shuffle<E, Op>), dim3(blocks), dim3(kThreads), 0, a.stream, x, partials, n, cols, false);
      KL_LAUNCH((reduce_shuffle<float, Op>), dim3(1), dim3(kThreads), 0, a.stream, partials, y, int64_t{blocks}, cols, false);
    }
  });
}

}  // namespace kl::KL_TARGET
