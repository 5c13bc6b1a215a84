// gemm_w4a16's weights: a real-valued n x k weight, heavy-tailed as trained weights are, quantized
// to int4 per group by the helper library and stored the ways the op's inputs hold it.
#include <cmath>
#include <cstring>

#include "kernelab/rng.h"
#include "ops/gemm_w4a16/gemm_w4a16.h"
#include "quant/quantize.h"
#include "quant/w4_fragments.h"

namespace kl {

namespace {
// The weight's seed follows the problem's: a hash (FNV-1a) of the random codes the harness drew for W.
uint64_t seed_of(const Tensor& w) {
  uint64_t h = 0xcbf29ce484222325ull;
  const auto* b = static_cast<const uint8_t*>(w.data());
  for (size_t i = 0; i < w.nbytes(); ++i) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

double normal(Rng& rng) {  // Box-Muller
  const double u = 1.0 - rng.uniform(0, 1), v = rng.uniform(0, 1);
  return std::sqrt(-2 * std::log(u)) * std::cos(2 * M_PI * v);
}

// Student-t with 3 degrees of freedom (z / sqrt(chi2_3 / 3)) times 0.02: a trained layer's scale
// with its occasional outliers, which set a group's scale as they do in a real model. Each row has
// its own stream, so the rows are drawn in parallel and the weight is the same on any core count
// (one thread took 8 s of a 14336 x 4096 bench's setup, per m of a sweep).
quant::Matrix draw_weight(int64_t n, int64_t k, uint64_t seed) {
  quant::Matrix w(n, k);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < n; ++r) {
    Rng rng(seed ^ (0x9e3779b97f4a7c15ull * uint64_t(r + 1)));
    for (int64_t c = 0; c < k; ++c) {
      double chi2 = 0;
      for (int i = 0; i < 3; ++i) chi2 += std::pow(normal(rng), 2);
      w.v[size_t(r * k + c)] = 0.02 * normal(rng) / std::sqrt(chi2 / 3);
    }
  }
  return w;
}

quant::QuantSpec spec_of(const W4A16Params& a) {
  quant::QuantSpec s;
  s.format = quant::Format::int4;
  s.granularity.kind = quant::Granularity::Kind::group;
  s.granularity.rows = 1;
  s.granularity.cols = a.group;
  s.zero = a.zero == W4Zero::gptq ? quant::ZeroPoint::integer : a.zero == W4Zero::awq ? quant::ZeroPoint::float_min : quant::ZeroPoint::none;
  return s;
}
}  // namespace

void w4a16_quantized_weights(const Problem& p, std::vector<Tensor>& in) {
  const W4A16Params& a = p.as<W4A16Params>();
  const quant::Quantized q = quant::quantize(draw_weight(a.n, a.k, seed_of(in[W4A16Params::kW])), spec_of(a));
  std::vector<uint8_t> codes(static_cast<size_t>(a.n * a.k));  // unsigned, 0..15
  auto* w = static_cast<uint8_t*>(in[W4A16Params::kW].data());
#pragma omp parallel for schedule(static)  // by rows: k is even, so no byte holds two rows' nibbles
  for (int64_t r = 0; r < a.n; ++r)
    for (int64_t i = r * a.k; i < (r + 1) * a.k; ++i) {
      // Symmetric codes are the int4's two's complement nibble; asymmetric ones are unsigned already.
      const int v = a.has_zeros() ? int(q.codes[size_t(i)]) - 8 : int(int8_t(uint8_t(q.codes[size_t(i)] << 4)) >> 4);
      i4_set(w, i, int8_t(v));
      codes[size_t(i)] = uint8_t(v + 8);
    }
  for (int64_t t = 0; t < a.n * a.groups(); ++t) {
    in[W4A16Params::kScales].set(t, q.scales[size_t(t)]);  // rounded to the dtype, as a kernel stores it
    if (a.zero == W4Zero::gptq) in[W4A16Params::kZeros].set(t, q.zeros[size_t(t)] - 8);
    if (a.zero == W4Zero::awq) in[W4A16Params::kZeros].set(t, q.zeros[size_t(t)]);
  }
  const std::vector<uint32_t> words = quant::pack_w4_fragments(codes, a.n, a.k);
  std::memcpy(in[a.packed_index()].data(), words.data(), words.size() * sizeof(uint32_t));
}

}  // namespace kl
