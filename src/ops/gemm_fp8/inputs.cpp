// gemm_fp8's inputs: real-valued activations and weights quantized to e4m3, per tensor or per block.
#include <cstring>

#include "ops/gemm_fp8/gemm_fp8.h"
#include "ops/quant_inputs.h"
#include "quant/quantize.h"

namespace kl {

namespace {
// The e4m3 codes into `codes`, the tile scales (row-major over the tiles) into `scales`.
void quantize_e4m3(const quant::Matrix& x, int64_t tile_rows, bool per_tensor, Tensor& codes, Tensor& scales) {
  quant::QuantSpec s;
  s.format = quant::Format::fp8_e4m3;
  s.granularity.kind = per_tensor ? quant::Granularity::Kind::tensor : quant::Granularity::Kind::block;
  s.granularity.rows = tile_rows;
  s.granularity.cols = Fp8Params::kBlock;
  const quant::Quantized q = quant::quantize(x, s);
  std::memcpy(codes.data(), q.codes.data(), q.codes.size());
  for (size_t t = 0; t < q.scales.size(); ++t) scales.set(int64_t(t), q.scales[t]);
}
}  // namespace

void fp8_quantized_inputs(const Problem& p, std::vector<Tensor>& in) {
  const Fp8Params& a = p.as<Fp8Params>();
  using P = Fp8Params;
  quantize_e4m3(quant_inputs::activations(a.m, a.k, quant_inputs::seed_of(in[P::kA])), 1, !a.block(), in[P::kA], in[P::kSa]);
  quantize_e4m3(quant_inputs::weights(a.n, a.k, quant_inputs::seed_of(in[P::kW])), P::kBlock, !a.block(), in[P::kW], in[P::kSw]);
}

}  // namespace kl
