// transpose v01: one thread per element, reading x along rows (coalesced) and writing y down
// columns: each warp's 32 stores land on 32 different cache lines (uncoalesced writes).
#include "ops/gpu_rung.h"

namespace kl::KL_TARGET {

namespace {
template <class E>
__global__ void transpose_naive(const E* __restrict__ x, E* __restrict__ y, int rows, int cols) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;  // column of x
  const int i = blockIdx.y * blockDim.y + threadIdx.y;  // row of x
  if (i < rows && j < cols) y[static_cast<int64_t>(j) * rows + i] = x[static_cast<int64_t>(i) * cols + j];
}

template <class E> void run(const Problem& p, const Args& a) {
  const int rows = static_cast<int>(p.dim("rows")), cols = static_cast<int>(p.dim("cols"));
  const dim3 block(32, 8);
  const dim3 grid((cols + 31) / 32, (rows + 7) / 8);
  KL_LAUNCH(transpose_naive<E>, grid, block, 0, a.stream, static_cast<const E*>(a.in[0].data()),
            static_cast<E*>(a.out[0].data()), rows, cols);
}
}  // namespace

void transpose_v01_naive(const Problem& p, const Args& a) {
  if (dtype_bits(p.dtype) == 32) run<uint32_t>(p, a);
  else run<uint16_t>(p, a);
}

}  // namespace kl::KL_TARGET
