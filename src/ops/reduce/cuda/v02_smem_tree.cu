// reduce v02: a block folds its elements in shared memory as a tree (each step halves the active
// threads, a barrier between steps) and writes one result: one global write per block instead of
// one contended atomic per element. over=rows: a block per row. over=total: pass 1 writes a
// partial per block to the workspace, pass 2 (one block, same kernel) folds them: deterministic.
#include "ops/reduce/cuda/common.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using namespace reduce_cuda;
static_assert((kThreads & (kThreads - 1)) == 0, "the tree halves the block: a power-of-2 block");

// y[blockIdx.x] = the fold of this block's share of x (see block_share).
template <class E, class Op>
__global__ void __launch_bounds__(kThreads)
    reduce_tree(const E* __restrict__ x, float* __restrict__ y, int64_t n, int64_t cols, bool per_row) {
  KL_SHARED(float, s, [kThreads]);
  const Share share = block_share(n, cols, per_row);
  float acc = Op::identity();
  for (int64_t i = share.t; i < share.len; i += share.stride) acc = Op::apply(acc, to_float(x[share.base + i]));
  s[threadIdx.x] = acc;
  __syncthreads();
  for (unsigned half = kThreads / 2; half > 0; half /= 2) {  // log2(256) = 8 steps, 8 barriers
    if (threadIdx.x < half) s[threadIdx.x] = Op::apply(s[threadIdx.x], s[threadIdx.x + half]);
    __syncthreads();
  }
  if (threadIdx.x == 0) y[blockIdx.x] = s[0];
}

void launch(const ReduceParams& p, const Args& a) {
  dispatch(p, [&]<class E, class Op>() {
    const int64_t n = p.n();
    const auto* x = static_cast<const E*>(a.in[0].data());
    auto* y = static_cast<float*>(a.out[0].data());
    if (!p.total) {
      KL_LAUNCH((reduce_tree<E, Op>), dim3(static_cast<unsigned>(p.rows)), dim3(kThreads), 0, a.stream, x, y, n, p.cols, true);
      return;
    }
    auto* partials = static_cast<float*>(a.workspace);
    const int blocks = total_blocks(n, 1);
    KL_LAUNCH((reduce_tree<E, Op>), dim3(blocks), dim3(kThreads), 0, a.stream, x, partials, n, p.cols, false);
    KL_LAUNCH((reduce_tree<float, Op>), dim3(1), dim3(kThreads), 0, a.stream, partials, y, int64_t{blocks}, p.cols, false);
  });
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  const Rung<ReduceParams> r{
      .op = "reduce",
      .name = "cuda_smem_tree",
      .note = "a block folds in a shared-memory tree and writes once: one global write per block instead of an atomic per element; over=total in two launches",
      .workspace_bytes = partials_bytes,
      .configs = {{.name = "256_threads",
                   .threads = kThreads,
                   .kernels = {{for_inputs_all([](auto e, auto op) { return KL_KERNEL(reduce_tree<decltype(e), decltype(op)>); }),
                                {"bar.sync", "st.shared.f32"},
                                {"BAR.SYNC", "STS"}}},
                   .run = launch}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
