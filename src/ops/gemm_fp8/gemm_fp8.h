// gemm_fp8: D [m, n] = dequant(A) . dequant(W)^T, A (m x k) and W (n x k) in fp8 e4m3 with fp32
// scales, D in bf16 or fp16 (the problem's dtype). --scaling:
//   tensor: one scale for A and one for W (sa [1], sw [1]);
//   block:  DeepSeek-V3's: A per 1 x 128 (a row's run of 128 k: sa [m, k/128]) and W per 128 x 128
//           (sw [ceil(n/128), k/128]), so k must hold whole 128-blocks.
// Inputs, in order: A, sa, W, sw; all from src/quant's fp8 quantizer (scale = amax / 448).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernelab/op.h"
#include "ops/cpu_isa.h"

namespace kl {

enum class Fp8Scaling { tensor, block };

// What every gemm_fp8 rung receives, parsed once from the problem.
struct Fp8Params {
  int64_t m = 0, n = 0, k = 0;
  Fp8Scaling scaling = Fp8Scaling::tensor;
  DType dtype = DType::bf16;  // of D
  static constexpr int64_t kBlock = 128;                     // block scaling's k (and W's n) extent
  static constexpr size_t kA = 0, kSa = 1, kW = 2, kSw = 3;  // input positions

  bool block() const { return scaling == Fp8Scaling::block; }
  int64_t k_blocks() const { return k / kBlock; }
  int64_t n_blocks() const { return (n + kBlock - 1) / kBlock; }
  // Scale of A(i, l) and of W(j, l) in their scale tensors.
  int64_t a_scale_at(int64_t i, int64_t l) const { return block() ? i * k_blocks() + l / kBlock : 0; }
  int64_t w_scale_at(int64_t j, int64_t l) const { return block() ? (j / kBlock) * k_blocks() + l / kBlock : 0; }
};

// A and W drawn as a model's and quantized to e4m3 by kl::quant::quantize at the problem's scaling.
void fp8_quantized_inputs(const Problem& p, std::vector<Tensor>& inputs);

KL_CPU_ISA_DECLARE(std::vector<Variant> gemm_fp8_cpu_variants())

}  // namespace kl
