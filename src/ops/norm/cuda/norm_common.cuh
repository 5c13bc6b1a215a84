// What the layernorm/rmsnorm rungs share: the tensors as a kernel sees them, Welford's running
// statistics and their merge (Chan et al.) across a warp and a block, and the two kinds' final
// coefficients. Every rung is a template on kLayer: layernorm centres on the mean, rmsnorm not;
// a rung file declares two variants, one per op, each launching its kind's instantiations.
#pragma once
#include "ops/gpu_rowwise.h"
#include "ops/norm/norm.h"

namespace kl::KL_TARGET::norm {

using namespace rowwise;

template <class E> struct Tensors {
  const E* x;
  const E* res;    // residual, or nullptr
  const E* gamma;  // (cols)
  const E* beta;   // (cols), layernorm only
  E* y;
  E* h;  // x + residual, or nullptr
  int rows, cols;
  float eps;
};

// The inputs are x, gamma, [beta], [residual]; the outputs y, [h] (ops/norm/op.cpp).
template <class E> Tensors<E> tensors_of(const NormParams& p, const Args& a, bool layer) {
  const bool res = p.residual;
  return {static_cast<const E*>(a.in[0].data()),
          res ? static_cast<const E*>(a.in.back().data()) : nullptr,
          static_cast<const E*>(a.in[1].data()),
          layer ? static_cast<const E*>(a.in[2].data()) : nullptr,
          static_cast<E*>(a.out[0].data()),
          res ? static_cast<E*>(a.out[1].data()) : nullptr,
          static_cast<int>(p.rows),
          static_cast<int>(p.cols),
          static_cast<float>(p.eps)};
}

// Count, mean and sum of squared deviations from the mean of the values seen. Divisions are
// __fdividef (2 ulp, no slow-path subroutine call): counts are far below its 2^126 limit.
struct Welford {
  float n, mean, m2;
};
__device__ __forceinline__ void welford_add(Welford& w, float v) {
  w.n += 1.0f;
  const float d = v - w.mean;
  w.mean += __fdividef(d, w.n);
  w.m2 += d * (v - w.mean);
}
__device__ __forceinline__ Welford welford_merge(const Welford& a, const Welford& b) {
  const float n = a.n + b.n;
  if (n == 0.0f) return a;
  const float d = b.mean - a.mean, fb = __fdividef(b.n, n);
  return {n, a.mean + d * fb, a.m2 + b.m2 + d * d * a.n * fb};
}
__device__ __forceinline__ Welford warp_welford(Welford w) {
  for (int o = 16; o > 0; o >>= 1) {
    const Welford other{__shfl_xor_sync(0xffffffffu, w.n, o), __shfl_xor_sync(0xffffffffu, w.mean, o),
                        __shfl_xor_sync(0xffffffffu, w.m2, o)};
    w = welford_merge(w, other);
  }
  return w;
}
// Warps merge by shuffles, then warp 0 merges the warps' results; blockDim.x a multiple of 32,
// buf of 33. Every thread gets the same statistics (those of slot 32).
__device__ __forceinline__ Welford block_welford(Welford w, Welford* buf) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  w = warp_welford(w);
  if (lane == 0) buf[warp] = w;
  __syncthreads();
  if (warp == 0) {
    w = warp_welford(lane < static_cast<int>(blockDim.x / 32) ? buf[lane] : Welford{0, 0, 0});
    if (lane == 0) buf[32] = w;
  }
  __syncthreads();
  return buf[32];
}

// y = (v - shift) * rstd * gamma (+ beta): layernorm shifts by the mean and scales by
// 1/sqrt(var + eps); rmsnorm scales by 1/sqrt(mean(v^2) + eps), mean(v^2) = var + mean^2.
struct Coeffs {
  float shift, rstd;
};
template <bool kLayer> __device__ __forceinline__ Coeffs coeffs_of(const Welford& w, float eps) {
  const float var = __fdividef(w.m2, w.n);
  if constexpr (kLayer) return {w.mean, rsqrtf(var + eps)};
  else return {0.0f, rsqrtf(var + w.mean * w.mean + eps)};
}

// The op a rung's variant of kind kLayer belongs to.
inline const char* op_of(bool layer) { return layer ? "layernorm" : "rmsnorm"; }

}  // namespace kl::KL_TARGET::norm
