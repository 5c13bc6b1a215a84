// Time intervals [start, end) in ns: unions (HTA's merge_kernel_intervals) and their lengths.
#pragma once
#include <vector>

#include "trace/trace_data.h"

namespace kl::trace {

struct Interval {
  Ns start = 0, end = 0;
};

// Sorted by start, overlapping and touching intervals merged.
std::vector<Interval> merge_intervals(std::vector<Interval> v);
Ns covered(const std::vector<Interval>& merged);  // total length of merged intervals
Ns union_length(std::vector<Interval> v);

// Length of [a, b) covered by merged intervals; `from` is a search hint that only moves forward
// (pass the same variable for increasing a).
Ns covered_within(const std::vector<Interval>& merged, Ns a, Ns b, size_t& from);

// Interpolated quantile of sorted values (numpy's default "linear").
double quantile_sorted(const std::vector<Ns>& sorted, double q);

// a + b for sums of durations or bytes; BadInput past 2^63 (only a crafted trace gets there).
int64_t checked_add(int64_t a, int64_t b);

}  // namespace kl::trace
