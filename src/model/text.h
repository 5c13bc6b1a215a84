// How the model's explanations write numbers: four significant digits, a time in its unit.
#pragma once
#include <fmt/format.h>

#include <string>

namespace kl::model {

inline std::string num(double x) { return fmt::format("{:.4g}", x); }

inline std::string secs(double s) {
  if (s < 1e-6) return fmt::format("{:.4g} ns", s * 1e9);
  if (s < 1e-3) return fmt::format("{:.4g} us", s * 1e6);
  if (s < 1) return fmt::format("{:.4g} ms", s * 1e3);
  return fmt::format("{:.4g} s", s);
}

}  // namespace kl::model
