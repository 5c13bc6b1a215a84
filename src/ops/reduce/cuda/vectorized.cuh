// reduce v04's kernels and its over=rows launch, in a header because v05 runs them too (its
// over=rows is v04's). Only v04 and v05 include it: each gets its own instantiations (an unnamed
// namespace), which its object's static facts and its declared kernels name.
#pragma once
#include <vector>

#include "ops/reduce/cuda/common.cuh"

namespace kl::KL_TARGET::reduce_cuda {

namespace {

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

// v04 over=rows: a warp per row up to kWarpRowMax, else a block per row.
template <class E, class Op> void launch_rows_vec(const ReduceParams& p, const Args& a) {
  const auto* x = static_cast<const E*>(a.in[0].data());
  auto* y = static_cast<float*>(a.out[0].data());
  if (p.cols <= kWarpRowMax) {
    const auto blocks = static_cast<unsigned>((p.rows + kWarps - 1) / kWarps);
    KL_LAUNCH((reduce_rows_warp_vec<E, Op>), dim3(blocks), dim3(kThreads), 0, a.stream, x, y, p.rows, p.cols);
  } else {
    KL_LAUNCH((reduce_vec<E, Op>), dim3(static_cast<unsigned>(p.rows)), dim3(kThreads), 0, a.stream, x, y, p.n(), p.cols, true);
  }
}

// The kernels v04's launches run, every instantiation, in two groups by the claims they hold:
// both fold 16-byte read-only vector loads and shuffle down; the block-wide one also has a barrier.
std::vector<KernelGroup> vec_groups() {
  return {{for_inputs_all([](auto e, auto op) { return KL_KERNEL(reduce_rows_warp_vec<decltype(e), decltype(op)>); }),
           {"ld.global.nc.v4", "shfl.sync.down"},
           {"LDG.E.128.CONSTANT", "SHFL.DOWN"}},
          {for_inputs_all([](auto e, auto op) { return KL_KERNEL(reduce_vec<decltype(e), decltype(op)>); }),
           {"ld.global.nc.v4", "shfl.sync.down", "bar.sync"},
           {"LDG.E.128.CONSTANT", "SHFL.DOWN", "BAR.SYNC"}}};
}

}  // namespace

}  // namespace kl::KL_TARGET::reduce_cuda
