// The gemm epilogue on the GPU (gemm.h: D = act(alpha*acc + beta*C + bias) + R), in fp32 registers
// before D is rounded: every rung applies it where it stores D, so bias, activation and residual
// cost no pass over D of their own.
#pragma once
#include "ops/gemm/gemm.h"
#include "ops/gpu_rung.h"

namespace kl::KL_TARGET::gemm_epilogue {

// gelu in the erf form the op defines, silu = t * sigmoid(t).
__device__ __forceinline__ float activate(GemmEpilogue e, float t) {
  if (e == GemmEpilogue::bias_gelu) return 0.5f * t * erfcf(-t * 0.70710678118654752f);
  if (e == GemmEpilogue::bias_silu) return t / (1.0f + expf(-t));
  return t;
}

// The epilogue's tensors: the bias (n) unless none, then R (m x n) when there is a residual.
template <class T> struct Tensors {
  const T* bias = nullptr;
  const T* r = nullptr;
};
template <class T> Tensors<T> tensors(const GemmParams& p, const Args& x) {
  const bool has_bias = p.epilogue != GemmEpilogue::none;
  return {has_bias ? static_cast<const T*>(x.in[3].data()) : nullptr,
          p.residual ? static_cast<const T*>(x.in[has_bias ? 4 : 3].data()) : nullptr};
}

}  // namespace kl::KL_TARGET::gemm_epilogue
