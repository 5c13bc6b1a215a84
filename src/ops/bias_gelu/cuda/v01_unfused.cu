// bias_gelu v01: unfused, as two library calls would run it: a bias-add kernel writes
// t = x + bias to a workspace in the dtype, then a gelu kernel reads it back. Twice the
// traffic of the fused op (t written and read once more), two launches, scalar accesses.
#include "ops/bias_gelu/cuda/gelu.cuh"

namespace kl::KL_TARGET {

namespace {
using namespace bias_gelu;
constexpr int kThreads = 256;

template <class E>
__global__ void add_bias(const E* __restrict__ x, const E* __restrict__ bias, E* __restrict__ t, int64_t n, int cols) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    t[i] = from_f32<E>(to_f32(x[i]) + to_f32(bias[i % cols]));
}

template <class E> __global__ void apply_gelu(const E* __restrict__ t, E* __restrict__ y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    y[i] = from_f32<E>(gelu(to_f32(t[i])));
}

template <class E> void run(const Problem& p, const Args& a) {
  const int cols = static_cast<int>(p.dim("cols"));
  const int64_t n = p.dim("rows") * cols;
  E* t = static_cast<E*>(a.workspace);  // (rows, cols) in the dtype
  KL_LAUNCH(add_bias<E>, grid_for(n, kThreads), kThreads, 0, a.stream, static_cast<const E*>(a.in[0].data()),
            static_cast<const E*>(a.in[1].data()), t, n, cols);
  KL_LAUNCH(apply_gelu<E>, grid_for(n, kThreads), kThreads, 0, a.stream, t, static_cast<E*>(a.out[0].data()), n);
}
}  // namespace

void bias_gelu_v01_unfused(const Problem& p, const Args& a) {
  rowwise::with_element(p.dtype, [&](auto e) { run<decltype(e)>(p, a); });
}

}  // namespace kl::KL_TARGET
