// An op's inputs for problem p, every byte zero: hand-computed cases set the few elements they use.
#pragma once
#include <vector>

#include "kernelab/op.h"
#include "kernelab/tensor.h"

namespace kl::test {

inline std::vector<Tensor> zero_inputs(const Op& op, const Problem& p) {
  std::vector<Tensor> in;
  for (const TensorSpec& s : op.inputs(p)) {
    in.push_back(Tensor::host(s.dtype, s.shape));
    in.back().fill_bytes(0);
  }
  return in;
}

}  // namespace kl::test
