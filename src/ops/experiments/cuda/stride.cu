// exp_stride on the GPU: thread (r, c) of grid row c copies unit r*stride + c of x to unit
// c*R + r of y, units of 1, 2 or 4 floats. A warp's loads sit `stride` units apart, its stores
// are contiguous; no index arithmetic beyond a multiply-add, so only the access pattern varies.
#include "ops/experiments/experiments.h"
#include "ops/gpu_rung.h"

namespace kl::KL_TARGET {

namespace {
template <int V> struct Unit;
template <> struct Unit<1> { using T = float; };
template <> struct Unit<2> { using T = float2; };
template <> struct Unit<4> { using T = float4; };

template <int V>
__global__ void __launch_bounds__(256) strided_copy(const typename Unit<V>::T* __restrict__ x, typename Unit<V>::T* __restrict__ y,
                                                    int64_t per_column, int64_t stride) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x, c = blockIdx.y;
  if (r < per_column) y[c * per_column + r] = x[r * stride + c];
}

template <int V> void run(const Problem& p, const Args& a) {
  const int64_t s = p.dim("stride"), per_column = p.dim("n") / V / s;
  const dim3 grid(static_cast<unsigned>((per_column + 255) / 256), static_cast<unsigned>(s));
  using T = typename Unit<V>::T;
  KL_LAUNCH(strided_copy<V>, grid, dim3(256), 0, a.stream, static_cast<const T*>(a.in[0].data()), static_cast<T*>(a.out[0].data()),
            per_column, s);
}
}  // namespace

void exp_stride_v01(const Problem& p, const Args& a) {
  switch (stride_unit_floats(p)) {
    case 1: run<1>(p, a); return;
    case 2: run<2>(p, a); return;
    default: run<4>(p, a); return;
  }
}

}  // namespace kl::KL_TARGET
