#include "model/roofline.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "kernelab/error.h"

namespace kl::model {

const Format& parse_format(std::string_view name) {
  static const std::vector<std::pair<std::string_view, Format>> formats = {
      {"fp64", {"fp64", 8, "fp64", DType::f64}},        {"fp32", {"fp32", 4, "fp32", DType::f32}},
      {"tf32", {"tf32", 4, "tf32", DType::f32}},        {"fp16", {"fp16", 2, "fp16", DType::f16}},
      {"bf16", {"bf16", 2, "bf16", DType::bf16}},       {"fp8", {"fp8", 1, "fp8", DType::e4m3}},
      {"fp8e4m3", {"fp8", 1, "fp8", DType::e4m3}},      {"fp8e5m2", {"fp8e5m2", 1, "fp8", DType::e5m2}},
      {"int8", {"int8", 1, "int8", DType::i8}},
  };
  std::string known;
  for (const auto& [alias, f] : formats) {
    if (alias == name) return f;
    known += (known.empty() ? "" : ", ") + std::string(alias);
  }
  bad_input(fmt::format("unknown dtype '{}' (known: {})", name, known));
}

Roofline roofline(const Cost& c, double peak_flops, double bandwidth) {
  if (!(peak_flops > 0) || !(bandwidth > 0))
    bad_input(fmt::format("ceilings peak {} FLOP/s, bandwidth {} B/s: both must be positive", peak_flops, bandwidth));
  Roofline r;
  r.flops = c.flops;
  r.bytes = c.bytes;
  r.intensity = c.bytes > 0 ? c.flops / c.bytes : 0;
  r.ridge = peak_flops / bandwidth;
  r.t_compute_s = c.flops / peak_flops;
  r.t_memory_s = c.bytes / bandwidth;
  r.t_lower_bound_s = std::max(r.t_compute_s, r.t_memory_s);
  r.compute_bound = r.t_compute_s >= r.t_memory_s && c.flops > 0;
  return r;
}

}  // namespace kl::model
