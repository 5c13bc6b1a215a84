// gemm_w8a8: D [m, n] = diag(sa) . (A_q . W_q^T) . diag(sw), A_q an m x k int8 activation quantized
// per row (token) with fp32 scales sa [m], W_q an n x k int8 weight quantized per output channel with
// fp32 scales sw [n]; the products summed exactly in int32, D in fp16 or bf16 (the problem's dtype).
// Inputs, in order: A_q, sa, W_q, sw; all four come from src/quant's symmetric int8 quantizer.
#pragma once
#include <cstddef>
#include <climits>
#include <cstdint>
#include <vector>

#include "kernelab/op.h"
#include "ops/cpu_isa.h"

namespace kl {

// What every gemm_w8a8 rung receives, parsed once from the problem.
struct W8A8Params {
  int64_t m = 0, n = 0, k = 0;
  DType dtype = DType::f16;  // of D
  static constexpr size_t kA = 0, kSa = 1, kW = 2, kSw = 3;  // input positions
};

// A and W drawn as a model's (activations with outlier channels, heavy-tailed weights) and quantized
// to int8 per row by kl::quant::quantize: the codes into A_q and W_q, the scales into sa and sw.
void w8a8_quantized_inputs(const Problem& p, std::vector<Tensor>& inputs);

KL_CPU_ISA_DECLARE(std::vector<Variant> gemm_w8a8_cpu_variants())

// What both CUDA rungs refuse (their block tiles are 128 rows): sizes past 31 bits, more block rows
// than gridDim.y holds, and a k at which the int32 sums could wrap.
inline Reason int8_rung_sizes(const W8A8Params& p) {
  if (p.m > INT32_MAX / 2 || p.n > INT32_MAX / 2 || p.k > INT32_MAX / 2) return "m, n and k must fit in 31 bits";
  if (p.m > int64_t{65535} * 128) return "m beyond 65535 block rows of 128 (gridDim.y's limit)";
  // The int32 sum of k products of at most 128 * 128 = 2^14 cannot wrap below 2^17 terms.
  if (p.k > (int64_t{1} << 17)) return "k over 131072: the int32 sums of int8 products could wrap";
  return {};
}

}  // namespace kl
