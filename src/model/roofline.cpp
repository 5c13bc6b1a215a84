#include "model/roofline.h"

#include <fmt/format.h>

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

}  // namespace kl::model
