// Named expressions of the fusion language (expr.h): the blocks a transformer runs between its
// GEMMs, as the `fused` op's check and report cases and as `--expr NAME`.
#pragma once
#include <algorithm>
#include <set>
#include <string>
#include <string_view>

#include "kernelab/error.h"

namespace kl::jit {

struct Preset {
  const char* name;
  const char* text;
  const char* vectors;  // the inputs that are row vectors, comma separated
};

inline constexpr Preset kPresets[] = {
    {"softmax_causal",
     "m = rowmax(where(col <= row, x * 0.125, -1e30)); e = exp(where(col <= row, x * 0.125, -1e30) - m); y = e / rowsum(e)", ""},
    {"layernorm", "mu = rowmean(x); d = x - mu; y = d * rsqrt(rowmean(d * d) + 1e-5) * g + b", "g,b"},
    {"rmsnorm_residual", "h = x + r; y = h * rsqrt(rowmean(h * h) + 1e-6) * g", "g"},
    {"bias_gelu", "y = gelu(x + b)", "b"},
    {"swiglu", "y = silu(a) * b", ""},
};

// "g,b" as {"g", "b"}; empty names skipped.
inline std::set<std::string> split_names(std::string_view list) {
  std::set<std::string> names;
  for (std::size_t at = 0; at < list.size();) {
    const std::size_t end = std::min(list.find(',', at), list.size());
    if (end > at) names.insert(std::string(list.substr(at, end - at)));
    at = end + 1;
  }
  return names;
}

inline const Preset* find_preset(std::string_view name) {
  for (const Preset& p : kPresets)
    if (name == p.name) return &p;
  return nullptr;
}

}  // namespace kl::jit

namespace kl::jit {

// An expression as given (`fuse EXPR`, `--expr`) with the row vectors given (`--vector`): a named
// one's text and its own row vectors, else the text as written. BadInput when a named one is
// given row vectors too.
struct Expression {
  std::string text;
  std::set<std::string> vectors;
};
inline Expression resolve_expression(const std::string& given, const std::set<std::string>& vectors) {
  const Preset* named = find_preset(given);
  if (!named) return {given, vectors};
  if (!vectors.empty())
    bad_input(given + " names its own row vectors (" + named->vectors + "); drop --vector");
  return {named->text, split_names(named->vectors)};
}

}  // namespace kl::jit
