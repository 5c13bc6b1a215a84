// gemm_w8a8's contract: parameters, validation, cost, inputs (int8 codes and fp32 scales from a drawn
// activation and weight), the float64 reference on dequantized values and the baseline an int8
// kernel computes (exact int32 sums, the scales applied in fp32, D rounded once).
#include <fmt/format.h>

#include <array>
#include <string>

#include "kernelab/error.h"
#include "ops/gemm_w8a8/gemm_w8a8.h"
#include "ops/quant_gemm_ref.h"
#include "ops/ops.h"

namespace kl {

namespace {
W8A8Params params_of(const Problem& p) { return {p.dim("m"), p.dim("n"), p.dim("k"), p.dtype}; }

void validate(const Problem& p) {
  const W8A8Params a = params_of(p);
  if (a.m < 1) bad_input(fmt::format("m={} must be at least 1", a.m));
  if (a.n < 1) bad_input(fmt::format("n={} must be at least 1", a.n));
  if (a.k < 16 || a.k % 16 != 0)
    bad_input(fmt::format("k={} is not a positive multiple of 16: rows of the int8 A and W move as 16-byte vectors "
                          "(cp.async, and cuBLASLt's int8 kernels want 16-byte aligned rows); pad k with zero columns",
                          a.k));
}

// float64 on the dequantized values: sa[i] * A(i, l) and sw[j] * W(j, l).
std::vector<std::vector<double>> reference(const Problem& p, std::span<const Tensor> in) {
  const W8A8Params& a = p.as<W8A8Params>();
  std::vector<double> x = to_doubles(in[a.kA]), w = to_doubles(in[a.kW]);
  const std::vector<double> sa = to_doubles(in[a.kSa]), sw = to_doubles(in[a.kSw]);
  for (int64_t i = 0; i < a.m * a.k; ++i) x[size_t(i)] *= sa[size_t(i / a.k)];
  for (int64_t i = 0; i < a.n * a.k; ++i) w[size_t(i)] *= sw[size_t(i / a.k)];
  return reference_outputs(quant_gemm::abt(a.m, a.n, a.k, x, w));
}

// As an int8 kernel computes it: the products summed exactly in int32 (exact in float64 too), float(sum)
// * sa * sw in fp32, D rounded once to the dtype.
std::vector<std::vector<double>> dtype_baseline(const Problem& p, std::span<const Tensor> in) {
  const W8A8Params& a = p.as<W8A8Params>();
  const float* sa = in[a.kSa].as<float>();
  const float* sw = in[a.kSw].as<float>();
  std::vector<double> d = quant_gemm::abt(a.m, a.n, a.k, to_doubles(in[a.kA]), to_doubles(in[a.kW]));
  for (int64_t i = 0; i < a.m; ++i)
    for (int64_t j = 0; j < a.n; ++j) {
      double& v = d[size_t(i * a.n + j)];
      v = quant_gemm::round_to(a.dtype, double(float(int32_t(v)) * sa[i] * sw[j]));
    }
  return reference_outputs(std::move(d));
}

Cost cost(const Problem& p) {
  const W8A8Params a = params_of(p);
  const double m = double(a.m), n = double(a.n), k = double(a.k);
  return Cost{2 * m * n * k, m * k + n * k + 4 * (m + n) + m * n * dtype_bits(a.dtype) / 8.0};
}

std::vector<TensorSpec> inputs(const Problem& p) {
  const W8A8Params a = params_of(p);
  return {{"A_q", DType::i8, {a.m, a.k}, {}},
          {"sa", DType::f32, {a.m}, {}},
          {"W_q", DType::i8, {a.n, a.k}, {}},
          {"sw", DType::f32, {a.n}, {}}};
}

// m through 1, 7, 33, 127, 130 and 1000; n 48 and 272 (not multiples of a 128 tile) and one odd n;
// k 96, 160 and 224 (not multiples of 64), and 10944 and 7392 (tensor-parallel slices) at small m, n.
std::vector<Problem> check_cases(const Op& op) {
  const std::vector<std::array<int64_t, 3>> shapes = {{1, 48, 96},    {7, 272, 160},  {33, 48, 10944}, {127, 272, 224},
                                                      {130, 48, 7392}, {1000, 32, 64}, {7, 33, 64}};
  std::vector<Problem> out;
  for (DType t : {DType::f16, DType::bf16})
    for (const auto& s : shapes) out.push_back(make_problem(op, t, {{"m", s[0]}, {"n", s[1]}, {"k", s[2]}}));
  return out;
}
}  // namespace

Op make_gemm_w8a8_op() {
  Op op;
  op.name = "gemm_w8a8";
  op.summary = "D = diag(sa) (A_q W_q^T) diag(sw): int8 activations quantized per token and int8 weights per output "
               "channel (symmetric, fp32 scales), int32 sums, fp16/bf16 D";
  op.counting = "2*m*n*k OPs (int8 multiply-adds, the scaling not counted); bytes: A_q and W_q at one byte, sa and sw "
                "fp32, D in the dtype, each once";
  op.dims = {{"m", 16, "rows of A and D (tokens)"},
             {"n", 4096, "output features: rows of W, columns of D", false},
             {"k", 4096, "the reduction: columns of A and W (a multiple of 16)", false}};
  op.dtypes = {DType::f16, DType::bf16};
  op.validate = validate;
  op.parse = [](const Problem& p) -> std::any { return params_of(p); };
  op.cost = cost;
  op.inputs = inputs;
  op.derived_inputs = w8a8_quantized_inputs;
  op.outputs = [](const Problem& p) { return std::vector<TensorSpec>{{"D", p.dtype, {p.dim("m"), p.dim("n")}, {}}}; };
  op.reference = reference;
  op.dtype_baseline = dtype_baseline;
  op.check_cases = check_cases;
  op.report_cases = [](const Op& self) {
    return std::vector<Problem>{make_problem(self, DType::bf16, {{"m", 16}, {"n", 2048}, {"k", 2048}}),
                                make_problem(self, DType::f16, {{"m", 512}, {"n", 2048}, {"k", 2048}})};
  };
  // Tile multiples, so the tensor-instruction count is exactly 2mnk / (2*16*8*32).
  op.profile_cases = [](const Op& self) {
    return std::vector<Problem>{make_problem(self, DType::bf16, {{"m", 256}, {"n", 256}, {"k", 256}})};
  };
  // Tolerance: 4 units of the dtype's roundoff plus twice dtype_baseline's error (the harness's rule);
  // the int32 sums are exact, so what is left is the fp32 scaling and D's one rounding.
  op.tolerance = [](const Problem& p) { return default_tolerance(p.dtype); };
  op.error_per_row = false;  // over the whole D, as gemm: a row of n may cancel
  op.variants = KL_CPU_ISA_VARIANTS(gemm_w8a8_cpu_variants);
  return op;
}

}  // namespace kl
