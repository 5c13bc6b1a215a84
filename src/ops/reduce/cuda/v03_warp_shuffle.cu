// reduce v03: the tree runs in registers: __shfl_down_sync folds the 32 lanes of a warp with no
// shared memory and no barrier, then one shared slot per warp and one more warp fold (see
// block_reduce in common.cuh): 1 barrier per block instead of v02's 9. Rows of up to
// kWarpRowMax elements get one warp each instead of a whole block (no idle threads on short rows).
#include "ops/reduce/cuda/common.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
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

void launch(const ReduceParams& p, const Args& a) {
  dispatch(p, [&]<class E, class Op>() {
    const int64_t n = p.n();
    const auto* x = static_cast<const E*>(a.in[0].data());
    auto* y = static_cast<float*>(a.out[0].data());
    if (!p.total && p.cols <= kWarpRowMax) {
      const auto blocks = static_cast<unsigned>((p.rows + kWarps - 1) / kWarps);
      KL_LAUNCH((reduce_rows_warp<E, Op>), dim3(blocks), dim3(kThreads), 0, a.stream, x, y, p.rows, p.cols);
    } else if (!p.total) {
      KL_LAUNCH((reduce_shuffle<E, Op>), dim3(static_cast<unsigned>(p.rows)), dim3(kThreads), 0, a.stream, x, y, n, p.cols, true);
    } else {
      auto* partials = static_cast<float*>(a.workspace);
      const int blocks = total_blocks(n, 1);
      KL_LAUNCH((reduce_shuffle<E, Op>), dim3(blocks), dim3(kThreads), 0, a.stream, x, partials, n, p.cols, false);
      KL_LAUNCH((reduce_shuffle<float, Op>), dim3(1), dim3(kThreads), 0, a.stream, partials, y, int64_t{blocks}, p.cols, false);
    }
  });
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  const Rung<ReduceParams> r{
      .op = "reduce",
      .name = "cuda_warp_shuffle",
      .note = "warps fold in registers with shuffles, one shared slot per warp: 1 barrier a block instead of 9, and a warp per row for rows up to 1024",
      .workspace_bytes = partials_bytes,
      .configs = {{.name = "256_threads",
                   .threads = kThreads,
                   .kernels = {{for_inputs_all([](auto e, auto op) { return KL_KERNEL(reduce_shuffle<decltype(e), decltype(op)>); }),
                                {"shfl.sync.down", "bar.sync"},
                                {"SHFL.DOWN", "BAR.SYNC"}},
                               {for_inputs_all([](auto e, auto op) { return KL_KERNEL(reduce_rows_warp<decltype(e), decltype(op)>); }),
                                {"shfl.sync.down"},
                                {"SHFL.DOWN"}}},
                   .run = launch}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
