// gemm_fp8's contract: parameters, validation, cost, inputs (e4m3 codes and fp32 scales from a drawn
// activation and weight), the float64 reference on dequantized values and the baseline an fp8
// tensor-core kernel computes (fp32 sums of exact products, promoted once per 128-k block).
#include <fmt/format.h>

#include <array>
#include <string>

#include "kernelab/error.h"
#include "ops/gemm_fp8/gemm_fp8.h"
#include "ops/quant_gemm_ref.h"
#include "ops/ops.h"

namespace kl {

namespace {
Fp8Params params_of(const Problem& p) {
  return {p.dim("m"), p.dim("n"), p.dim("k"), p.opt("scaling") == "block" ? Fp8Scaling::block : Fp8Scaling::tensor, p.dtype};
}

void validate(const Problem& p) {
  const Fp8Params a = params_of(p);
  if (a.m < 1) bad_input(fmt::format("m={} must be at least 1", a.m));
  if (a.n < 1) bad_input(fmt::format("n={} must be at least 1", a.n));
  if (a.k < 16 || a.k % 16 != 0)
    bad_input(fmt::format("k={} is not a positive multiple of 16: rows of the fp8 A and W move as 16-byte vectors "
                          "(cp.async; cuBLASLt's fp8 kernels want 16-byte aligned rows); pad k with zero columns",
                          a.k));
  if (a.block() && a.k % Fp8Params::kBlock != 0)
    bad_input(fmt::format("k={} is not a multiple of 128 with --scaling block: A has a scale per 1x128 and W per 128x128 "
                          "block along k, and a partial last block would need scales the layout has no room for "
                          "(--scaling tensor takes it)",
                          a.k));
}

// float64 on the dequantized values: A(i, l) and W(j, l) times their (block's) scales.
std::vector<std::vector<double>> reference(const Problem& p, std::span<const Tensor> in) {
  const Fp8Params& a = p.as<Fp8Params>();
  std::vector<double> x = to_doubles(in[a.kA]), w = to_doubles(in[a.kW]);
  const std::vector<double> sa = to_doubles(in[a.kSa]), sw = to_doubles(in[a.kSw]);
  for (int64_t i = 0; i < a.m * a.k; ++i) x[size_t(i)] *= sa[size_t(a.a_scale_at(i / a.k, i % a.k))];
  for (int64_t i = 0; i < a.n * a.k; ++i) w[size_t(i)] *= sw[size_t(a.w_scale_at(i / a.k, i % a.k))];
  return reference_outputs(quant_gemm::abt(a.m, a.n, a.k, x, w));
}

// As an fp8 tensor-core kernel computes it: each product exact in fp32 and summed there; with block
// scaling, each 128-k block's sum times sa * sw added into an fp32 total (the promotion); with a tensor
// scale, the one sum times sa * sw; D rounded once.
std::vector<std::vector<double>> dtype_baseline(const Problem& p, std::span<const Tensor> in) {
  const Fp8Params& a = p.as<Fp8Params>();
  const std::vector<double> xd = to_doubles(in[a.kA]), wd = to_doubles(in[a.kW]);
  const std::vector<float> x(xd.begin(), xd.end()), w(wd.begin(), wd.end());
  const float* sa = in[a.kSa].as<float>();
  const float* sw = in[a.kSw].as<float>();
  const int64_t span = a.block() ? Fp8Params::kBlock : a.k;
  std::vector<float> total(size_t(a.m * a.n), 0.0f);
  for (int64_t l0 = 0; l0 < a.k; l0 += span) {
    const std::vector<float> part = quant_gemm::abt_f32(a.m, a.n, a.k, x, w, l0, span);
    for (int64_t i = 0; i < a.m; ++i)
      for (int64_t j = 0; j < a.n; ++j) total[size_t(i * a.n + j)] += part[size_t(i * a.n + j)] * (sa[a.a_scale_at(i, l0)] * sw[a.w_scale_at(j, l0)]);
  }
  std::vector<double> d(total.size());
  for (size_t i = 0; i < d.size(); ++i) d[i] = quant_gemm::round_to(a.dtype, total[i]);
  return reference_outputs(std::move(d));
}

Cost cost(const Problem& p) {
  const Fp8Params a = params_of(p);
  const double m = double(a.m), n = double(a.n), k = double(a.k);
  const double scales = a.block() ? double(a.m * a.k_blocks() + a.n_blocks() * a.k_blocks()) : 2.0;
  return Cost{2 * m * n * k, m * k + n * k + 4 * scales + m * n * dtype_bits(a.dtype) / 8.0};
}

std::vector<TensorSpec> inputs(const Problem& p) {
  const Fp8Params a = params_of(p);
  const Shape sa = a.block() ? Shape{a.m, a.k_blocks()} : Shape{1}, sw = a.block() ? Shape{a.n_blocks(), a.k_blocks()} : Shape{1};
  return {{"A", DType::e4m3, {a.m, a.k}, {}}, {"sa", DType::f32, sa, {}}, {"W", DType::e4m3, {a.n, a.k}, {}}, {"sw", DType::f32, sw, {}}};
}

// m through 1, 7, 33, 127, 130 and 1000; n 48 and 272 (not multiples of a 128 tile or scale block)
// and one odd n; k multiples of 128 for block scaling (two of them not multiples of 256), and k 96,
// 160 and 10944 (not multiples of 128) with a tensor scale; both dtypes.
std::vector<Problem> check_cases(const Op& op) {
  const std::vector<std::array<int64_t, 3>> block = {{1, 48, 128},  {7, 272, 384},  {33, 48, 1024},
                                                     {127, 272, 256}, {130, 48, 640}, {1000, 32, 128}, {7, 33, 256}};
  const std::vector<std::array<int64_t, 3>> tensor = {{1, 48, 96}, {33, 272, 160}, {7, 48, 10944}, {130, 33, 64}};
  std::vector<Problem> out;
  for (DType t : {DType::bf16, DType::f16}) {
    for (const auto& s : block)
      out.push_back(make_problem(op, t, {{"m", s[0]}, {"n", s[1]}, {"k", s[2]}}, {{"scaling", "block"}}));
    for (const auto& s : tensor)
      out.push_back(make_problem(op, t, {{"m", s[0]}, {"n", s[1]}, {"k", s[2]}}, {{"scaling", "tensor"}}));
  }
  return out;
}
}  // namespace

Op make_gemm_fp8_op() {
  Op op;
  op.name = "gemm_fp8";
  op.summary = "D = dequant(A) dequant(W)^T with A and W in fp8 e4m3: one fp32 scale each (--scaling tensor) or "
               "DeepSeek-V3's 1x128 activation and 128x128 weight block scales (--scaling block); bf16/fp16 D";
  op.counting = "2*m*n*k FLOPs (the scaling not counted); bytes: A and W at one byte, the fp32 scales, D in the dtype, each once";
  op.dims = {{"m", 16, "rows of A and D (tokens)"},
             {"n", 4096, "output features: rows of W, columns of D", false},
             {"k", 4096, "the reduction: columns of A and W (a multiple of 16; of 128 with block scaling)", false}};
  op.opts = {{"scaling", {"tensor", "block"}, "block",
              "tensor: one fp32 scale for A and one for W; block: A per 1x128 along k, W per 128x128"}};
  op.dtypes = {DType::f16, DType::bf16};
  op.validate = validate;
  op.parse = [](const Problem& p) -> std::any { return params_of(p); };
  op.cost = cost;
  op.inputs = inputs;
  op.derived_inputs = fp8_quantized_inputs;
  op.outputs = [](const Problem& p) { return std::vector<TensorSpec>{{"D", p.dtype, {p.dim("m"), p.dim("n")}, {}}}; };
  op.reference = reference;
  op.dtype_baseline = dtype_baseline;
  op.check_cases = check_cases;
  op.report_cases = [](const Op& self) {
    return std::vector<Problem>{make_problem(self, DType::bf16, {{"m", 512}, {"n", 2048}, {"k", 2048}}, {{"scaling", "block"}}),
                                make_problem(self, DType::bf16, {{"m", 512}, {"n", 2048}, {"k", 2048}}, {{"scaling", "tensor"}})};
  };
  op.profile_cases = [](const Op& self) {
    return std::vector<Problem>{make_problem(self, DType::bf16, {{"m", 256}, {"n", 256}, {"k", 256}}, {{"scaling", "block"}})};
  };
  // Tolerance: 4 units of the dtype's roundoff plus twice dtype_baseline's error (the harness's rule).
  op.tolerance = [](const Problem& p) { return default_tolerance(p.dtype); };
  op.error_per_row = false;  // over the whole D, as gemm: a row of n may cancel
  op.variants = KL_CPU_ISA_VARIANTS(gemm_fp8_cpu_variants);
  return op;
}

}  // namespace kl
