// exp_stride on the GPU: thread (r, c) of grid row c copies unit r*stride + c of x to unit
// c*R + r of y, units of 1, 2 or 4 floats. A warp's loads sit `stride` units apart, its stores
// are contiguous; no index arithmetic beyond a multiply-add, so only the access pattern varies.
#include "ops/experiments/experiments.h"
#include "ops/gpu_rung.h"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
constexpr int kThreads = 256;

template <int V> struct Unit;
template <> struct Unit<1> { using T = float; };
template <> struct Unit<2> { using T = float2; };
template <> struct Unit<4> { using T = float4; };

template <int V>
__global__ void __launch_bounds__(kThreads) strided_copy(const typename Unit<V>::T* __restrict__ x, typename Unit<V>::T* __restrict__ y,
                                                         int64_t per_column, int64_t stride) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x, c = blockIdx.y;
  if (r < per_column) y[c * per_column + r] = x[r * stride + c];
}

template <int V> void run(const ExpStrideParams& p, const Args& a) {
  const int64_t s = p.stride, per_column = p.per_column();
  const dim3 grid(static_cast<unsigned>((per_column + kThreads - 1) / kThreads), static_cast<unsigned>(s));
  using T = typename Unit<V>::T;
  KL_LAUNCH(strided_copy<V>, grid, dim3(kThreads), 0, a.stream, static_cast<const T*>(a.in[0].data()), static_cast<T*>(a.out[0].data()),
            per_column, s);
}

void launch(const ExpStrideParams& p, const Args& a) {
  switch (p.unit_floats()) {
    case 1: run<1>(p, a); return;
    case 2: run<2>(p, a); return;
    default: run<4>(p, a); return;
  }
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<ExpStrideParams> r{
      .op = "exp_stride",
      .name = "cuda",
      .note = "a thread per unit, a grid row per column of units: loads `stride` units apart across a warp, stores contiguous",
      .configs = {{.name = "256_threads",
                   .threads = kThreads,
                   .kernels = {{{KL_KERNEL(strided_copy<4>)}, {"ld.global.nc.v4", "st.global.v4"}, {"LDG.E.128.CONSTANT", "STG.E.128"}},
                               {{KL_KERNEL(strided_copy<2>)}, {"ld.global.nc.v2", "st.global.v2"}, {"LDG.E.64.CONSTANT", "STG.E.64"}},
                               {{KL_KERNEL(strided_copy<1>)}, {"ld.global.nc.f32", "st.global.f32"}, {"LDG.E.CONSTANT", "STG.E"}}},
                   .run = launch}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
