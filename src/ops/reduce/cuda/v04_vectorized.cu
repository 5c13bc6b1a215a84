// reduce v04: v03's folds, with each thread reading 16-byte vectors (4 fp32 or 8 16-bit
// elements a load) and four loads in flight per loop trip (fold_span16 in common.cuh); over=total
// launches only enough blocks for several vectors a thread, grid-striding. Should save load
// instructions (4-8x), loop overhead and latency stalls: bandwidth, not issue, is now the limit.
#include "ops/reduce/cuda/common.cuh"

namespace kl::KL_TARGET {

namespace {
using namespace reduce_cuda;

// y[blockIdx.x] = the fold of this block's share of x (see block_share).
template <class E, class Op>
__global__ void __launch_bounds__(kThreads)
    reduce_vec(const E* __restrict__ x, float* __restrict__ y, int64_t n, int64_t cols, bool per_row) {
  const Share share = block_share(n, cols, per_row);
  float acc = fold_span16<E, Op>(x + share.base, share.len, share.t, share.stride);
  acc = block_reduce<Op>(acc);
  if (threadIdx.x == 0) y[blockIdx.x] = acc;
}

// Short rows: warp w of the grid folds row w alone (each row aligned on its own).
template <class E, class Op>
__global__ void __launch_bounds__(kThreads)
    reduce_rows_warp_vec(const E* __restrict__ x, float* __restrict__ y, int64_t rows, int64_t cols) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (row >= rows) return;  // the whole warp leaves: its shuffles below still see 32 lanes
  const int lane = threadIdx.x % 32;
  float acc = warp_reduce<Op>(fold_span16<E, Op>(x + row * cols, cols, lane, 32));
  if (lane == 0) y[row] = acc;
}
}  // namespace

void reduce_v04_vectorized(const Problem& p, const Args& a) {
  dispatch(p, [&]<class E, class Op>() {
    const int64_t rows = p.dim("rows"), cols = p.dim("cols"), n = rows * cols;
    const auto* x = static_cast<const E*>(a.in[0].data());
    auto* y = static_cast<float*>(a.out[0].data());
    if (p.opt("over") == "rows" && cols <= kWarpRowMax) {
      const auto blocks = static_cast<unsigned>((rows + kWarps - 1) / kWarps);
      KL_LAUNCH((reduce_rows_warp_vec<E, Op>), dim3(blocks), dim3(kThreads), 0, a.stream, x, y, rows, cols);
    } else if (p.opt("over") == "rows") {
      KL_LAUNCH((reduce_vec<E, Op>), dim3(static_cast<unsigned>(rows)), dim3(kThreads), 0, a.stream, x, y, n, cols, true);
    } else {
      auto* partials = static_cast<float*>(a.workspace);
      const int blocks = total_blocks(n, 4 * 16 / sizeof(E));  // four vectors a thread at least
      KL_LAUNCH((reduce_vec<E, Op>), dim3(blocks), dim3(kThreads), 0, a.stream, x, partials, n, cols, false);
      KL_LAUNCH((reduce_vec<float, Op>), dim3(1), dim3(kThreads), 0, a.stream, partials, y, int64_t{blocks}, cols, false);
    }
  });
}

}  // namespace kl::KL_TARGET
