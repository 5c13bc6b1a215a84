// The roofline: an op's FLOPs and bytes against a compute peak and a bandwidth. The number
// formats the analytic tools take, with their element size and the peak each one runs at.
#pragma once
#include <string>
#include <string_view>

#include "kernelab/dtype.h"
#include "kernelab/op.h"

namespace kl::model {

struct Format {
  std::string name;      // "bf16"
  double bytes = 0;      // per element
  std::string peak_key;  // the key of GpuSpec::peak this format runs at
  DType storage;         // how the registry ops store it (tf32 is stored as fp32)
};

// fp64, fp32, tf32, fp16, bf16, fp8 (fp8e4m3, fp8e5m2), int8; BadInput naming the unknown one.
const Format& parse_format(std::string_view name);

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

}  // namespace kl::model
