// A reduce rung with a race, for the race check: a block folds in a shared-memory tree, but the
// barrier between the tree's steps is missing, so a thread may read its partner's slot before the
// partner has written it. On the usual thread order the answer is often right; the race check
// (`check --race-check`, forward against reversed order between barriers) finds it every time.
#include "ops/reduce/cuda/common.cuh"

namespace kl::KL_TARGET {

namespace {
using namespace reduce_cuda;

template <class E, class Op>
__global__ void __launch_bounds__(kThreads)
    reduce_tree_racy(const E* __restrict__ x, float* __restrict__ y, int64_t n, int64_t cols, bool per_row) {
  KL_SHARED(float, s, [kThreads]);
  const Share share = block_share(n, cols, per_row);
  float acc = Op::identity();
  for (int64_t i = share.t; i < share.len; i += share.stride) acc = Op::apply(acc, to_float(x[share.base + i]));
  s[threadIdx.x] = acc;
  __syncthreads();
  for (unsigned half = kThreads / 2; half > 0; half /= 2)  // the planted bug: no barrier between steps
    if (threadIdx.x < half) s[threadIdx.x] = Op::apply(s[threadIdx.x], s[threadIdx.x + half]);
  if (threadIdx.x == 0) y[blockIdx.x] = s[0];
}

void launch(const ReduceParams& p, const Args& a) {
  dispatch(p, [&]<class E, class Op>() {
    const auto* x = static_cast<const E*>(a.in[0].data());
    auto* y = static_cast<float*>(a.out[0].data());
    if (!p.total) {
      KL_LAUNCH((reduce_tree_racy<E, Op>), dim3(static_cast<unsigned>(p.rows)), dim3(kThreads), 0, a.stream, x, y, p.n(), p.cols, true);
      return;
    }
    auto* partials = static_cast<float*>(a.workspace);
    const int blocks = total_blocks(p.n(), 1);
    KL_LAUNCH((reduce_tree_racy<E, Op>), dim3(blocks), dim3(kThreads), 0, a.stream, x, partials, p.n(), p.cols, false);
    KL_LAUNCH((reduce_tree_racy<float, Op>), dim3(1), dim3(kThreads), 0, a.stream, partials, y, int64_t{blocks}, p.cols, false);
  });
}
}  // namespace

KL_RUNGS {
  const Rung<ReduceParams> r{
      .op = "reduce",
      .name = "user_tree_missing_barrier",
      .note = "a shared-memory tree with the barrier between its steps left out: a race",
      .workspace_bytes = partials_bytes,
      .configs = {{.name = "256_threads",
                   .threads = kThreads,
                   .kernels = {{for_inputs_all([](auto e, auto op) { return KL_KERNEL(reduce_tree_racy<decltype(e), decltype(op)>); }),
                                {"bar.sync"},
                                {"BAR.SYNC"}}},
                   .run = launch}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
