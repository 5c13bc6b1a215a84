// Accuracy metrics of a quantized result y against its reference x (same length), accumulated in
// double.
#pragma once
#include <vector>

namespace kl::quant {

// DeepGEMM's calc_diff: 1 - 2*sum(x*y) / (sum(x^2) + sum(y^2)); 0 when identical (and when both
// are all zero).
double calc_diff(const std::vector<double>& x, const std::vector<double>& y);
// Marlin's test metric: mean|y - x| / mean|x|.
double rel_err(const std::vector<double>& ref, const std::vector<double>& y);
double cosine(const std::vector<double>& x, const std::vector<double>& y);
// 10 log10(sum(ref^2) / sum((y - ref)^2)); +infinity when y == ref.
double snr_db(const std::vector<double>& ref, const std::vector<double>& y);
double max_abs_err(const std::vector<double>& ref, const std::vector<double>& y);
double mse(const std::vector<double>& ref, const std::vector<double>& y);

}  // namespace kl::quant
