// bias_gelu v01: unfused, as two library calls would run it: a bias-add kernel writes
// t = x + bias to a workspace in the dtype, then a gelu kernel reads it back. Twice the
// traffic of the fused op (t written and read once more), two launches, scalar accesses.
#include "ops/bias_gelu/cuda/gelu.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
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

template <class E> void run(const BiasGeluParams& p, const Args& a) {
  const int cols = static_cast<int>(p.cols);
  const int64_t n = p.n();
  E* t = static_cast<E*>(a.workspace);  // (rows, cols) in the dtype
  KL_LAUNCH(add_bias<E>, grid_for(n, kThreads), kThreads, 0, a.stream, static_cast<const E*>(a.in[0].data()),
            static_cast<const E*>(a.in[1].data()), t, n, cols);
  KL_LAUNCH(apply_gelu<E>, grid_for(n, kThreads), kThreads, 0, a.stream, t, static_cast<E*>(a.out[0].data()), n);
}

void launch(const BiasGeluParams& p, const Args& a) {
  rowwise::with_element(p.x, [&](auto e) { run<decltype(e)>(p, a); });
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<BiasGeluParams> r{.op = "bias_gelu",
                         .name = "cuda_unfused",
                         .note = "two kernels as two library calls would run them: x + bias written to a workspace in the dtype, then read back for gelu: twice the traffic, two launches",
                         .workspace_bytes = [](const BiasGeluParams& p) { return static_cast<size_t>(dtype_storage_bytes(p.x, p.n())); },
                         .configs = {{.name = "256_threads",
                                      .threads = kThreads,
                                      .kernels = {{for_elements([](auto e) { return KL_KERNEL(add_bias<decltype(e)>); }), {}, {}},
                                                  {for_elements([](auto e) { return KL_KERNEL(apply_gelu<decltype(e)>); }), {}, {}}},
                                      .run = launch}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
