// SmoothQuant (Xiao et al., 2023, eq. 4) for W8A8: per input channel j,
// s_j = max|X_j|^alpha / max|W_j|^(1 - alpha); X' = X / s (each column j divided), W' = W * s (each
// column j multiplied), so X' W'^T = X W^T while the activation outliers move into the weights.
// A channel whose activation or weight column is all zero keeps s_j = 1; s_j is floored at 1e-5
// as the paper's code floors its activation maxima.
#pragma once
#include <vector>

#include "quant/matrix.h"

namespace kl::quant {

std::vector<double> smooth_scales(const Matrix& x, const Matrix& w, double alpha = 0.5);
void smooth_apply(Matrix& x, Matrix& w, const std::vector<double>& s);  // X / s and W * s in place

}  // namespace kl::quant
