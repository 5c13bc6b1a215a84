// reduce v05: over=total in one launch instead of v04's two. Each block writes its partial to the
// workspace, makes it visible (__threadfence) and counts itself done on an atomic counter; the
// block that counts last folds all partials and writes the result. Saves the second launch and
// its gap (a few microseconds: most of the time on small inputs). over=rows is v04 (one launch).
#include "ops/reduce/cuda/common.cuh"

namespace kl::KL_TARGET {

void reduce_v04_vectorized(const Problem& p, const Args& a);

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
  __shared__ bool last;
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
}  // namespace

void reduce_v05_one_pass(const Problem& p, const Args& a) {
  if (p.opt("over") == "rows") return reduce_v04_vectorized(p, a);
  dispatch(p, [&]<class E, class Op>() {
    const int64_t n = p.dim("rows") * p.dim("cols");
    const int blocks = total_blocks(n, 4 * 16 / sizeof(E));  // four vectors a thread at least
    KL_LAUNCH((reduce_one_pass<E, Op>), dim3(blocks), dim3(kThreads), 0, a.stream, static_cast<const E*>(a.in[0].data()),
              static_cast<float*>(a.out[0].data()), static_cast<float*>(a.workspace), n);
  });
}

}  // namespace kl::KL_TARGET
