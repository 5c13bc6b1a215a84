// What the quantized GEMM ops (gemm_w8a8, gemm_fp8) draw before quantizing: activations with a few
// outlier channels, as a transformer's have, and heavy-tailed weights, seeded from the random codes
// the harness drew for the tensor, so the values follow the problem's seed.
#pragma once
#include <algorithm>
#include <cstdint>

#include "kernelab/rng.h"
#include "kernelab/tensor.h"
#include "quant/eval.h"
#include "quant/matrix.h"

namespace kl::quant_inputs {

// FNV-1a over the tensor's bytes.
inline uint64_t seed_of(const Tensor& t) {
  uint64_t h = 0xcbf29ce484222325ull;
  const auto* b = static_cast<const uint8_t*>(t.data());
  for (size_t i = 0; i < t.nbytes(); ++i) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

// rows x cols standard-normal activations; up to 4 channels (columns, chosen by the seed) x 20.
inline quant::Matrix activations(int64_t rows, int64_t cols, uint64_t seed) {
  quant::Matrix x = quant::generate(rows, cols, {quant::Distribution::Kind::normal, 0}, seed);
  Rng rng(seed ^ 0x9e3779b97f4a7c15ull);
  for (int64_t o = 0; o < std::min<int64_t>(4, cols); ++o) {
    const int64_t c = int64_t(rng.next() % uint64_t(cols));
    for (int64_t r = 0; r < rows; ++r) x.at(r, c) *= 20;
  }
  return x;
}

// rows x cols weights: 0.02 x Student-t with 3 degrees of freedom (a trained layer's scale and tails).
inline quant::Matrix weights(int64_t rows, int64_t cols, uint64_t seed) {
  quant::Matrix w = quant::generate(rows, cols, {quant::Distribution::Kind::student_t, 3}, seed);
  for (double& v : w.v) v *= 0.02;
  return w;
}

}  // namespace kl::quant_inputs
