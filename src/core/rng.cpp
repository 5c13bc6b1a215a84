#include "kernelab/rng.h"

#include <algorithm>

namespace kl {

uint64_t Rng::next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double Rng::uniform(double lo, double hi) {
  return lo + (hi - lo) * static_cast<double>(next() >> 11) * 0x1.0p-53;
}

void fill_uniform(Tensor& t, Rng& rng, double lo, double hi) {
  // Fill the whole storage span (strided tensors included); padding elements get values too.
  int64_t elems = t.dtype() == DType::i4 ? static_cast<int64_t>(t.nbytes()) * 2
                                         : static_cast<int64_t>(t.nbytes()) / (dtype_bits(t.dtype()) / 8);
  // Chunks of their own seed: deterministic and parallel (chunks are even, so int4 bytes are not shared).
  constexpr int64_t chunk = 1 << 16;
  const uint64_t base = rng.next();
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < (elems + chunk - 1) / chunk; ++c) {
    Rng local(base ^ (static_cast<uint64_t>(c) * 0xD1B54A32D192ED03ull));
    for (int64_t i = c * chunk; i < std::min(elems, (c + 1) * chunk); ++i) t.set(i, local.uniform(lo, hi));
  }
}

}  // namespace kl
