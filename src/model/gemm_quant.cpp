// Quantized gemm cost models (conventions in cost.h).
#include <fmt/format.h>

#include "kernelab/error.h"
#include "model/cost.h"

namespace kl::model {

namespace {
void check(const GemmShape& s) {
  if (s.m <= 0 || s.n <= 0 || s.k <= 0) bad_input(fmt::format("gemm m={}, n={}, k={}: dimensions must be positive", s.m, s.n, s.k));
}
}  // namespace

double gemm_weight_bytes(int64_t k, int64_t n, int weight_bits, int64_t group_size) {
  if (weight_bits != 4 && weight_bits != 8) bad_input(fmt::format("--weight-bits={}: must be 4 or 8", weight_bits));
  if (group_size <= 0) bad_input(fmt::format("--group-size={}: must be positive", group_size));
  const double groups = static_cast<double>((k + group_size - 1) / group_size);  // along k, per column
  return static_cast<double>(k) * static_cast<double>(n) * weight_bits / 8.0 + groups * static_cast<double>(n) * 2.0;
}

Cost gemm_weight_only_cost(const GemmShape& s, double act_bytes, int weight_bits, int64_t group_size) {
  check(s);
  const double m = static_cast<double>(s.m), n = static_cast<double>(s.n), k = static_cast<double>(s.k);
  return Cost{2 * m * n * k, (m * k + m * n) * act_bytes + gemm_weight_bytes(s.k, s.n, weight_bits, group_size)};
}

Dequantization w4_dequantization(const GemmShape& s) {
  check(s);
  Dequantization d;
  d.block_rows = s.m <= 16 ? 16 : 64;
  d.weights = static_cast<double>(s.n) * static_cast<double>(s.k) * static_cast<double>((s.m + d.block_rows - 1) / d.block_rows);
  d.instructions = d.weights * d.instructions_per_weight;
  return d;
}

Cost gemm_w8a8_cost(const GemmShape& s) {
  check(s);
  const double m = static_cast<double>(s.m), n = static_cast<double>(s.n), k = static_cast<double>(s.k);
  return Cost{2 * m * n * k, m * k + k * n + 2 * m * n + 4 * (m + n)};
}

std::optional<double> gemm_compute_bound_m(int64_t n, int64_t k, double act_bytes, double weight_bytes, double ridge) {
  const double nd = static_cast<double>(n), kd = static_cast<double>(k);
  const double denom = 2 * nd * kd - ridge * act_bytes * (kd + nd);
  if (denom <= 0) return std::nullopt;
  return ridge * weight_bytes / denom;
}

}  // namespace kl::model
