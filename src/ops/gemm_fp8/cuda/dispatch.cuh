// What the fp8 CUDA rungs share: their launch for the problem's output type and scaling,
// f(T{}, std::bool_constant<block>{}) with T __nv_bfloat16 or __half. f is each rung's own (a lambda
// of its file), so the kernels it launches are that file's, as its KL_KERNELs declare them.
#pragma once
#include <type_traits>

#include "ops/gemm_fp8/gemm_fp8.h"
#include "ops/gpu_rowwise.h"

namespace kl::KL_TARGET::fp8 {

template <class F> void with_type_and_scaling(const Fp8Params& p, F&& f) {
  const auto scaled = [&](auto t) {
    if (p.block()) f(t, std::true_type{});
    else f(t, std::false_type{});
  };
  if (p.dtype == DType::bf16) scaled(__nv_bfloat16{});
  else scaled(__half{});
}

}  // namespace kl::KL_TARGET::fp8
