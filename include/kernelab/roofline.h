// The roofline: an op's FLOPs and bytes against a compute peak and a bandwidth. One computation
// for the analytic tools (roofline, explain) and the benchmark points (harness).
#pragma once
#include <string_view>

#include "kernelab/op.h"

namespace kl {

struct Roofline {
  double flops = 0, bytes = 0;
  double intensity = 0;  // FLOP per byte
  double ridge = 0;      // peak / bandwidth: the intensity where the two roofs meet
  double t_compute_s = 0, t_memory_s = 0;
  double t_lower_bound_s = 0;  // max of the two
  bool compute_bound = false;  // intensity >= ridge
  std::string_view bound() const { return compute_bound ? "compute" : "memory"; }
};

// BadInput unless peak and bandwidth are positive.
Roofline roofline(const Cost& c, double peak_flops, double bandwidth);

}  // namespace kl
