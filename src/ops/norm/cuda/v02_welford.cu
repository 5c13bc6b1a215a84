// layernorm/rmsnorm v02: one kernel, a block per row: the residual add (h written once) and
// Welford's mean and variance in a single read of the row, merged across the block by warp
// shuffles and shared memory, then a second read to normalise. Saves two launches, the
// workspace, and the h read-back: two reads of the row instead of three or four.
#include "ops/norm/cuda/norm_common.cuh"

namespace kl::KL_TARGET {

namespace {
using namespace norm;
constexpr int kThreads = 256;

template <class E, bool kLayer> __global__ void norm_welford(Tensors<E> t) {
  __shared__ Welford buf[33];
  const int64_t offs = static_cast<int64_t>(blockIdx.x) * t.cols;
  const auto value = [&](int j) {  // the row's j-th value: x, or x + residual
    return t.res ? to_f32(t.x[offs + j]) + to_f32(t.res[offs + j]) : to_f32(t.x[offs + j]);
  };
  Welford w{0, 0, 0};  // read 1: statistics, and h
  for (int j = threadIdx.x; j < t.cols; j += kThreads) {
    const float v = value(j);
    if (t.h) t.h[offs + j] = from_f32<E>(v);
    welford_add(w, v);
  }
  const Coeffs c = coeffs_of<kLayer>(block_welford(w, buf), t.eps);
  for (int j = threadIdx.x; j < t.cols; j += kThreads) {  // read 2: y
    const float b = kLayer ? to_f32(t.beta[j]) : 0.0f;
    t.y[offs + j] = from_f32<E>((value(j) - c.shift) * c.rstd * to_f32(t.gamma[j]) + b);
  }
}

template <class E, bool kLayer> void run(const Problem& p, const Args& a) {
  const Tensors<E> t = tensors_of<E>(p, a, kLayer);
  KL_LAUNCH((norm_welford<E, kLayer>), t.rows, kThreads, 0, a.stream, t);
}
}  // namespace

KL_NORM_LAUNCHERS(norm_v02_welford)

}  // namespace kl::KL_TARGET
