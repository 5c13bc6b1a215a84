// `kernelab trace diff A B`: per-kernel count and time differences between two traces, and the
// change in each device's span, busy and idle time.
#pragma once
#include <string>
#include <vector>

#include "trace/analysis.h"

namespace kl::trace {

struct KernelDelta {
  std::string name;
  uint64_t count_a = 0, count_b = 0;
  Ns total_a = 0, total_b = 0;
  Ns delta() const { return total_b - total_a; }
};

struct TraceDiff {
  const Report* a = nullptr;
  const Report* b = nullptr;
  std::vector<KernelDelta> kernels;  // every kernel name in either, largest |time change| first
};

TraceDiff diff_reports(const Report& a, const Report& b);

}  // namespace kl::trace
