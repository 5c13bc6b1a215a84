// reduce v04: v03's folds, with each thread reading 16-byte vectors (4 fp32 or 8 16-bit
// elements a load) and four loads in flight per loop trip (fold_span16 in common.cuh); over=total
// launches only enough blocks for several vectors a thread, grid-striding. Should save load
// instructions (4-8x), loop overhead and latency stalls: bandwidth, not issue, is now the limit.
// The kernels (reduce_vec, reduce_rows_warp_vec) and the over=rows launch are in vectorized.cuh:
// v05 runs them too.
#include "ops/reduce/cuda/vectorized.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using namespace reduce_cuda;

void launch(const ReduceParams& p, const Args& a) {
  dispatch(p, [&]<class E, class Op>() {
    if (!p.total) return launch_rows_vec<E, Op>(p, a);
    const int64_t n = p.n();
    const auto* x = static_cast<const E*>(a.in[0].data());
    auto* y = static_cast<float*>(a.out[0].data());
    auto* partials = static_cast<float*>(a.workspace);
    const int blocks = total_blocks(n, 4 * 16 / sizeof(E));  // four vectors a thread at least
    KL_LAUNCH((reduce_vec<E, Op>), dim3(blocks), dim3(kThreads), 0, a.stream, x, partials, n, p.cols, false);
    KL_LAUNCH((reduce_vec<float, Op>), dim3(1), dim3(kThreads), 0, a.stream, partials, y, int64_t{blocks}, p.cols, false);
  });
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  const Rung<ReduceParams> r{
      .op = "reduce",
      .name = "cuda_vectorized",
      .note = "16-byte loads, four in flight per thread, over a grid sized for several vectors a thread: 4-8x fewer load instructions",
      .workspace_bytes = partials_bytes,
      .configs = {{.name = "256_threads", .threads = kThreads, .kernels = vec_groups(), .run = launch}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
