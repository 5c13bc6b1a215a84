#include "quant/metrics.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernelab/error.h"
#include "quant/matrix.h"

namespace kl::quant {

namespace {

void same_size(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size() || a.empty()) runtime_failure("metrics: vectors of different or zero length");
}

}  // namespace

double calc_diff(const std::vector<double>& x, const std::vector<double>& y) {
  same_size(x, y);
  double xy = 0, xx = 0, yy = 0;
  for (size_t i = 0; i < x.size(); ++i) xy += x[i] * y[i], xx += x[i] * x[i], yy += y[i] * y[i];
  return xx + yy > 0 ? 1.0 - 2.0 * xy / (xx + yy) : 0.0;
}

double rel_err(const std::vector<double>& ref, const std::vector<double>& y) {
  same_size(ref, y);
  double diff = 0, mag = 0;
  for (size_t i = 0; i < ref.size(); ++i) diff += std::fabs(y[i] - ref[i]), mag += std::fabs(ref[i]);
  return mag > 0 ? diff / mag : (diff > 0 ? std::numeric_limits<double>::infinity() : 0.0);
}

double cosine(const std::vector<double>& x, const std::vector<double>& y) {
  same_size(x, y);
  double xy = 0, xx = 0, yy = 0;
  for (size_t i = 0; i < x.size(); ++i) xy += x[i] * y[i], xx += x[i] * x[i], yy += y[i] * y[i];
  return xx > 0 && yy > 0 ? xy / std::sqrt(xx * yy) : (xx == yy ? 1.0 : 0.0);
}

double snr_db(const std::vector<double>& ref, const std::vector<double>& y) {
  same_size(ref, y);
  double sig = 0, noise = 0;
  for (size_t i = 0; i < ref.size(); ++i) sig += ref[i] * ref[i], noise += (y[i] - ref[i]) * (y[i] - ref[i]);
  if (noise == 0) return std::numeric_limits<double>::infinity();
  return 10.0 * std::log10(sig / noise);
}

double max_abs_err(const std::vector<double>& ref, const std::vector<double>& y) {
  same_size(ref, y);
  double m = 0;
  for (size_t i = 0; i < ref.size(); ++i) m = std::max(m, std::fabs(y[i] - ref[i]));
  return m;
}

double mse(const std::vector<double>& ref, const std::vector<double>& y) {
  same_size(ref, y);
  double s = 0;
  for (size_t i = 0; i < ref.size(); ++i) s += (y[i] - ref[i]) * (y[i] - ref[i]);
  return s / static_cast<double>(ref.size());
}

Matrix matmul_nt(const Matrix& x, const Matrix& w) {
  if (x.cols != w.cols) runtime_failure("matmul_nt: inner dimensions differ");
  Matrix c(x.rows, w.rows);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(x.rows), static_cast<int>(w.rows),
              static_cast<int>(x.cols), 1.0, x.v.data(), static_cast<int>(x.cols), w.v.data(), static_cast<int>(w.cols),
              0.0, c.v.data(), static_cast<int>(w.rows));
  return c;
}

}  // namespace kl::quant
