#include "quant/smoothquant.h"

#include <algorithm>
#include <cmath>

#include "kernelab/error.h"

namespace kl::quant {

std::vector<double> smooth_scales(const Matrix& x, const Matrix& w, double alpha) {
  if (x.cols != w.cols) bad_input("smoothquant: activations and weights have different K");
  if (!(alpha >= 0.0 && alpha <= 1.0)) bad_input("smoothquant: alpha must be in [0, 1]");
  std::vector<double> xmax(static_cast<size_t>(x.cols), 0.0), wmax(static_cast<size_t>(w.cols), 0.0);
  for (int64_t r = 0; r < x.rows; ++r)
    for (int64_t j = 0; j < x.cols; ++j) xmax[static_cast<size_t>(j)] = std::max(xmax[static_cast<size_t>(j)], std::fabs(x.at(r, j)));
  for (int64_t r = 0; r < w.rows; ++r)
    for (int64_t j = 0; j < w.cols; ++j) wmax[static_cast<size_t>(j)] = std::max(wmax[static_cast<size_t>(j)], std::fabs(w.at(r, j)));
  std::vector<double> s(static_cast<size_t>(x.cols), 1.0);
  for (size_t j = 0; j < s.size(); ++j)
    if (xmax[j] > 0 && wmax[j] > 0) s[j] = std::max(std::pow(xmax[j], alpha) / std::pow(wmax[j], 1.0 - alpha), 1e-5);
  return s;
}

void smooth_apply(Matrix& x, Matrix& w, const std::vector<double>& s) {
  for (int64_t r = 0; r < x.rows; ++r)
    for (int64_t j = 0; j < x.cols; ++j) x.at(r, j) /= s[static_cast<size_t>(j)];
  for (int64_t r = 0; r < w.rows; ++r)
    for (int64_t j = 0; j < w.cols; ++j) w.at(r, j) *= s[static_cast<size_t>(j)];
}

}  // namespace kl::quant
