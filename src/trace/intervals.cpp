#include "trace/intervals.h"

#include <algorithm>

#include "kernelab/error.h"

namespace kl::trace {

std::vector<Interval> merge_intervals(std::vector<Interval> v) {
  std::sort(v.begin(), v.end(), [](const Interval& x, const Interval& y) { return x.start < y.start; });
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (!out.empty() && i.start <= out.back().end) out.back().end = std::max(out.back().end, i.end);
    else out.push_back(i);
  }
  return out;
}

Ns covered(const std::vector<Interval>& merged) {
  Ns total = 0;
  for (const Interval& i : merged) total += i.end - i.start;  // disjoint and within one span: no overflow
  return total;
}

Ns union_length(std::vector<Interval> v) { return covered(merge_intervals(std::move(v))); }

Ns covered_within(const std::vector<Interval>& merged, Ns a, Ns b, size_t& from) {
  while (from < merged.size() && merged[from].end <= a) ++from;
  Ns total = 0;
  for (size_t i = from; i < merged.size() && merged[i].start < b; ++i)
    total += std::min(b, merged[i].end) - std::max(a, merged[i].start);
  return total;
}

double quantile_sorted(const std::vector<Ns>& v, double q) {
  if (v.empty()) return 0;
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return static_cast<double>(v[lo]) + static_cast<double>(v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

int64_t checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) bad_input("the trace's durations or bytes add up past 2^63: not a real profile");
  return r;
}

}  // namespace kl::trace
