// gemm_w8a8's inputs: real-valued activations and weights quantized per row to symmetric int8.
#include <cstring>

#include "ops/gemm_w8a8/gemm_w8a8.h"
#include "ops/quant_inputs.h"
#include "quant/quantize.h"

namespace kl {

namespace {
// Codes (two's complement bytes) into `codes`, one fp32 scale per row into `scales`.
void quantize_rows(const quant::Matrix& x, Tensor& codes, Tensor& scales) {
  quant::QuantSpec s;
  s.format = quant::Format::int8;
  s.granularity.kind = quant::Granularity::Kind::channel;
  const quant::Quantized q = quant::quantize(x, s);
  std::memcpy(codes.data(), q.codes.data(), q.codes.size());
  for (int64_t r = 0; r < x.rows; ++r) scales.set(r, q.scales[size_t(r)]);
}
}  // namespace

void w8a8_quantized_inputs(const Problem& p, std::vector<Tensor>& in) {
  const W8A8Params& a = p.as<W8A8Params>();
  using P = W8A8Params;
  quantize_rows(quant_inputs::activations(a.m, a.k, quant_inputs::seed_of(in[P::kA])), in[P::kA], in[P::kSa]);
  quantize_rows(quant_inputs::weights(a.n, a.k, quant_inputs::seed_of(in[P::kW])), in[P::kW], in[P::kSw]);
}

}  // namespace kl
