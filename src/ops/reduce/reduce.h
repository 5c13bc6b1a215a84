// reduce: sum or max of each row (over=rows, output (rows)) or of every element (over=total,
// output (1)); the result is fp32 whatever the input dtype.
#pragma once
#include <cstdint>
#include <vector>

#include "kernelab/op.h"
#include "ops/cpu_isa.h"

namespace kl {

// What every reduce rung receives, parsed once from the problem.
struct ReduceParams {
  int64_t rows = 0, cols = 0;
  bool is_max = false;  // mode=max; else mode=sum
  bool total = false;   // over=total: one result for all elements; else over=rows: one per row
  DType x = DType::f32;  // the input's dtype
  DType y = DType::f32;  // the result's: always fp32

  int64_t n() const { return rows * cols; }  // elements of x
  int64_t outputs() const { return total ? 1 : rows; }
};

KL_CPU_ISA_DECLARE(std::vector<Variant> reduce_cpu_variants())

// CUDA rungs over=total: at most this many blocks in the first pass, one fp32 partial each in
// the workspace.
inline constexpr int64_t kReduceMaxPartials = 1024;
}  // namespace kl
