// What the row-wise ops (softmax, layernorm, rmsnorm, transpose, reduce) share: their shape
// options and the correctness sweep of shapes.
#pragma once
#include <vector>

#include "kernelab/op.h"

namespace kl {

inline std::vector<DimSpec> rows_cols_dims() {
  return {{"rows", 4096, "number of rows"}, {"cols", 4096, "length of a row (contiguous)"}};
}

// Shapes of the correctness sweep: 1, odd, non-multiples of every tile, non-square, large. The
// tall ones have 333 rows and the one-column one 127, not 1000: a block-per-row rung's simulated
// cost is its rows times its block (512 threads for one column), whether the row has 1 or 1000 columns.
inline std::vector<std::pair<int64_t, int64_t>> rows_cols_sweep() {
  return {{1, 1},    {1, 7},    {7, 1},     {7, 33},   {33, 7},   {1, 1000},  {127, 1},
          {33, 127}, {127, 33}, {127, 1000}, {333, 127}, {64, 64}, {257, 513}, {1000, 1000}};
}

inline std::vector<DType> float_dtypes() { return {DType::f32, DType::f16, DType::bf16}; }

// The sweep over shapes and float dtypes, for each set of options given.
inline std::vector<Problem> rows_cols_cases(const Op& op, const std::vector<std::map<std::string, std::string>>& opt_sets) {
  std::vector<Problem> out;
  for (DType t : float_dtypes())
    for (const auto& opts : opt_sets)
      for (auto [r, c] : rows_cols_sweep()) out.push_back(make_problem(op, t, {{"rows", r}, {"cols", c}}, opts));
  return out;
}

}  // namespace kl
