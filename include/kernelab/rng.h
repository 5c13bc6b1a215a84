// Deterministic, seedable random inputs (splitmix64): the same seed gives the same tensor on
// every machine. Values are rounded to the tensor's dtype, so references see exactly the input.
#pragma once
#include <cstdint>

#include "kernelab/tensor.h"

namespace kl {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next();
  double uniform(double lo, double hi);  // [lo, hi)
 private:
  uint64_t state_;
};

// Fills a host tensor with values uniform in [lo, hi), then rounded to its dtype (so a
// narrow dtype can hold hi itself).
void fill_uniform(Tensor& t, Rng& rng, double lo = -1.0, double hi = 1.0);

}  // namespace kl
