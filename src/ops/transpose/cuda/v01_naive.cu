// transpose v01: one thread per element, reading x along rows (coalesced) and writing y down
// columns: each warp's 32 stores land on 32 different cache lines (uncoalesced writes).
#include "ops/transpose/cuda/elements.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using transpose_raw::Word;
constexpr int kBlockX = 32, kBlockY = 8;

template <int B>
__global__ void transpose_naive(const Word<B>* __restrict__ x, Word<B>* __restrict__ y, int rows, int cols) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;  // column of x
  const int i = blockIdx.y * blockDim.y + threadIdx.y;  // row of x
  if (i < rows && j < cols) y[static_cast<int64_t>(j) * rows + i] = x[static_cast<int64_t>(i) * cols + j];
}

template <int B> void run(const TransposeParams& p, const Args& a) {
  using E = Word<B>;
  const int rows = static_cast<int>(p.rows), cols = static_cast<int>(p.cols);
  const dim3 block(kBlockX, kBlockY);
  const dim3 grid((cols + kBlockX - 1) / kBlockX, (rows + kBlockY - 1) / kBlockY);
  KL_LAUNCH(transpose_naive<B>, grid, block, 0, a.stream, static_cast<const E*>(a.in[0].data()),
            static_cast<E*>(a.out[0].data()), rows, cols);
}

void launch(const TransposeParams& p, const Args& a) {
  transpose_raw::with_bytes(p, [&](auto b) { run<decltype(b)::value>(p, a); });
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<TransposeParams> r{.op = "transpose",
                          .name = "cuda_naive",
                          .note = "one thread per element: reads along rows coalesced, writes down columns, 32 cache lines per warp store",
                          .configs = {{.name = "32x8_threads",
                                       .threads = kBlockX * kBlockY,
                                       .kernels = {{transpose_raw::for_sizes([](auto b) { return KL_KERNEL(transpose_naive<decltype(b)::value>); }), {}, {}}},
                                       .run = launch}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
