// reduce v05: over=total in one launch instead of v04's two. Each block writes its partial to the
// workspace, makes it visible (__threadfence) and counts itself done on an atomic counter; the
// block that counts last folds all partials and writes the result. Saves the second launch and
// its gap (a few microseconds: most of the time on small inputs). over=rows is v04 (one launch):
// its kernels and launch, from vectorized.cuh.
#include "ops/reduce/cuda/vectorized.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using namespace reduce_cuda;

// Blocks of the current launch that have published their partial. It starts at 0 when the
// module loads and each launch leaves it at 0: atomicInc wraps to 0 when the last block counts
// itself, so the reset is part of that same atomic. One counter per process: launches of this
// kernel on concurrent streams would share it (the CUDA sample threadFenceReduction has the
// same limit); the harness runs launches one after another on one stream.
__device__ unsigned int blocks_done = 0;

template <class E, class Op>
__global__ void __launch_bounds__(kThreads)
    reduce_one_pass(const E* __restrict__ x, float* __restrict__ y, float* partials, int64_t n) {
  KL_SHARED(bool, last, );
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  float acc = block_reduce<Op>(fold_span16<E, Op>(x, n, t, static_cast<int64_t>(gridDim.x) * blockDim.x));
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = acc;
    __threadfence();  // the partial is visible to the whole device before this block is counted
    last = atomicInc(&blocks_done, gridDim.x - 1) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();  // the last block: every other block's partial (published before its count) is visible
  float v = Op::identity();
  for (unsigned i = threadIdx.x; i < gridDim.x; i += blockDim.x) v = Op::apply(v, __ldcg(partials + i));  // L2, not a stale L1
  v = block_reduce<Op>(v);
  if (threadIdx.x == 0) y[0] = v;
}

void launch(const ReduceParams& p, const Args& a) {
  dispatch(p, [&]<class E, class Op>() {
    if (!p.total) return launch_rows_vec<E, Op>(p, a);
    const int64_t n = p.n();
    const int blocks = total_blocks(n, 4 * 16 / sizeof(E));  // four vectors a thread at least
    KL_LAUNCH((reduce_one_pass<E, Op>), dim3(blocks), dim3(kThreads), 0, a.stream, static_cast<const E*>(a.in[0].data()),
              static_cast<float*>(a.out[0].data()), static_cast<float*>(a.workspace), n);
  });
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  std::vector<KernelGroup> groups = {{for_inputs_all([](auto e, auto op) { return KL_KERNEL(reduce_one_pass<decltype(e), decltype(op)>); }),
                                      {"ld.global.nc.v4", "membar.gl", "atom.global.inc"},
                                      {"LDG.E.128.CONSTANT", "MEMBAR", "ATOMG.E.INC"}}};
  for (KernelGroup& g : vec_groups()) groups.push_back(std::move(g));  // over=rows: v04's kernels
  const Rung<ReduceParams> r{
      .op = "reduce",
      .name = "cuda_one_pass",
      .note = "over=total in one launch: blocks publish partials (threadfence) and count themselves on an atomic; the last block folds them",
      .workspace_bytes = partials_bytes,
      .configs = {{.name = "256_threads", .threads = kThreads, .kernels = std::move(groups), .run = launch}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
