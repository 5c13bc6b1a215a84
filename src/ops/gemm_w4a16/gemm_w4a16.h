// gemm_w4a16: D [m, n] = A [m, k] . dequant(W)^T, A and D in fp16 or bf16, W an n x k int4 weight
// quantized per group of `group` weights along k (one scale, and a zero point, per group).
// Inputs, in order: A; W (int4, code - 8); scales [n, k/group] in the dtype; zeros [n, k/group]
// unless symmetric (GPTQ: int4, q_z - 8; AWQ: the float z in the dtype); W_packed, the codes in
// mma.sync's B-fragment order (quant/w4_fragments.h), as an engine ships its repacked weights.
// The dequantized weight, v the stored int4 value and code = v + 8:
//   none: s * v     gptq: s * (code - q_z)     awq: s * code - z
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernelab/op.h"
#include "ops/cpu_isa.h"

namespace kl {

enum class W4Zero { none, gptq, awq };  // none = symmetric

// What every gemm_w4a16 rung receives, parsed once from the problem.
struct W4A16Params {
  int64_t m = 0, n = 0, k = 0;
  int64_t group = 128;  // weights per scale along k
  W4Zero zero = W4Zero::none;
  DType dtype = DType::f16;  // of A, D, the scales and AWQ's zeros

  int64_t groups() const { return k / group; }  // scales per output row
  bool has_zeros() const { return zero != W4Zero::none; }
  // Positions of the inputs: A 0, W 1, scales 2, then zeros (if any), then W_packed.
  static constexpr size_t kA = 0, kW = 1, kScales = 2, kZeros = 3;
  size_t packed_index() const { return has_zeros() ? 4 : 3; }
};

// W, scales, zeros and W_packed from a real-valued weight drawn for the problem and quantized by
// the helper library (kl::quant::quantize), so codes and scales are what a model's would be.
void w4a16_quantized_weights(const Problem& p, std::vector<Tensor>& inputs);

KL_CPU_ISA_DECLARE(std::vector<Variant> gemm_w4a16_cpu_variants())

}  // namespace kl
