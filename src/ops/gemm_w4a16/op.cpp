// gemm_w4a16's contract: parameters, validation, cost, inputs (the quantized weights derived from a
// drawn real weight), the float64 reference and the baseline a kernel in the dtype would compute.
#include <cblas.h>
#include <fmt/format.h>

#include <array>
#include <climits>
#include <string>

#include "kernelab/error.h"
#include "ops/gemm_w4a16/gemm_w4a16.h"
#include "ops/ops.h"

namespace kl {

namespace {
W4Zero zero_of(const std::string& z) { return z == "gptq" ? W4Zero::gptq : z == "awq" ? W4Zero::awq : W4Zero::none; }

W4A16Params params_of(const Problem& p) {
  return {p.dim("m"), p.dim("n"), p.dim("k"), std::stoll(p.opt("group")), zero_of(p.opt("zero")), p.dtype};
}

void validate(const Problem& p) {
  const W4A16Params a = params_of(p);
  if (a.m < 1) bad_input(fmt::format("m={} must be at least 1", a.m));
  if (a.m > INT32_MAX || a.n > INT32_MAX || a.k > INT32_MAX)
    bad_input(fmt::format("m={}, n={}, k={}: each must fit in 32 bits (BLAS's and the kernels' indices)", a.m, a.n, a.k));
  if (a.k % a.group != 0)
    bad_input(fmt::format("k={} is not a multiple of the group {}: a group is the run of k weights that share one scale (and "
                          "zero point), so k must hold whole groups{}",
                          a.k, a.group, a.k % 64 == 0 ? " (--group 64 divides it)" : " (pad k to a multiple of 64 or 128)"));
  if (a.n % 16 != 0)
    bad_input(fmt::format("n={} is not a multiple of 16: the packed weights (W_packed) come in mma.sync's n16 x k16 steps", a.n));
  if (a.k % 16 != 0)
    bad_input(fmt::format("k={} is not a multiple of 16: the packed weights (W_packed) come in mma.sync's n16 x k16 steps", a.k));
}

double round_to(DType t, double x) { return t == DType::bf16 ? bf16_to_float(double_to_bf16(x)) : f16_to_float(double_to_f16(x)); }

// The dequantized weight (n x k, row-major) from W, the scales and the zeros as stored; `round`
// is what a kernel's arithmetic does to each value (nothing, for the reference).
template <class Round> std::vector<double> dequantized(const W4A16Params& a, std::span<const Tensor> in, Round round) {
  const std::vector<double> w = to_doubles(in[a.kW]), s = to_doubles(in[a.kScales]);
  const std::vector<double> z = a.has_zeros() ? to_doubles(in[a.kZeros]) : std::vector<double>{};
  std::vector<double> out(w.size());
  for (int64_t r = 0; r < a.n; ++r)
    for (int64_t c = 0; c < a.k; ++c) {
      const size_t i = size_t(r * a.k + c), t = size_t(r * a.groups() + c / a.group);
      const double code = w[i] + 8;
      const double x = a.zero == W4Zero::gptq ? s[t] * (code - (z[t] + 8)) : a.zero == W4Zero::awq ? s[t] * code - z[t] : s[t] * w[i];
      out[i] = round(x);
    }
  return out;
}

// D = A W^T by OpenBLAS: dgemm for the reference, sgemm (products exact, sums in fp32) for the baseline.
std::vector<double> product(const W4A16Params& a, const std::vector<double>& x, const std::vector<double>& w) {
  std::vector<double> d(size_t(a.m * a.n));
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(a.m), int(a.n), int(a.k), 1.0, x.data(), int(a.k), w.data(), int(a.k),
              0.0, d.data(), int(a.n));
  return d;
}
std::vector<double> product_in_floats(const W4A16Params& a, const std::vector<double>& x, const std::vector<double>& w) {
  const std::vector<float> xf(x.begin(), x.end()), wf(w.begin(), w.end());
  std::vector<float> d(size_t(a.m * a.n));
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(a.m), int(a.n), int(a.k), 1.0f, xf.data(), int(a.k), wf.data(), int(a.k),
              0.0f, d.data(), int(a.n));
  return {d.begin(), d.end()};
}

std::vector<std::vector<double>> reference(const Problem& p, std::span<const Tensor> in) {
  const W4A16Params& a = p.as<W4A16Params>();
  return reference_outputs(product(a, to_doubles(in[a.kA]), dequantized(a, in, [](double x) { return x; })));
}

// As a kernel in the dtype computes it: each dequantized weight rounded once to the dtype (one fused
// multiply-add), products exact in fp32 and summed there, D rounded once.
std::vector<std::vector<double>> dtype_baseline(const Problem& p, std::span<const Tensor> in) {
  const W4A16Params& a = p.as<W4A16Params>();
  std::vector<double> d = product_in_floats(a, to_doubles(in[a.kA]), dequantized(a, in, [&](double x) { return round_to(a.dtype, x); }));
  for (double& x : d) x = round_to(a.dtype, x);
  return reference_outputs(std::move(d));
}

Cost cost(const Problem& p) {
  const W4A16Params a = params_of(p);
  const double m = double(a.m), n = double(a.n), k = double(a.k), g = double(a.groups());
  const double e = dtype_bits(a.dtype) / 8.0;
  const double zeros = a.zero == W4Zero::gptq ? n * g / 2 : a.zero == W4Zero::awq ? n * g * e : 0.0;
  return Cost{2 * m * n * k, (m * k + m * n) * e + n * k / 2 + n * g * e + zeros};
}

std::vector<TensorSpec> inputs(const Problem& p) {
  const W4A16Params a = params_of(p);
  std::vector<TensorSpec> t = {{"A", a.dtype, {a.m, a.k}, {}}, {"W", DType::i4, {a.n, a.k}, {}}, {"scales", a.dtype, {a.n, a.groups()}, {}}};
  if (a.zero == W4Zero::gptq) t.push_back({"zeros", DType::i4, {a.n, a.groups()}, {}});
  if (a.zero == W4Zero::awq) t.push_back({"zeros", a.dtype, {a.n, a.groups()}, {}});
  t.push_back({"W_packed", DType::i32, {a.k / 16 * (a.n / 16) * 32}, {}});
  return t;
}

// m through 1, 7, 33, 127, 130 and 1000; n and k multiples of 16 but not of 128 where the group
// allows (k 64 and 192 with group 64; n 48 and 272); every zero convention in both dtypes. The
// next two split k across blocks on a GPU of any size (the CUDA rungs' k tile is 64): 22 tiles in
// splits of 5, the second starting inside a group of 128; 11 tiles in 6 + 5. Then decode shapes
// for the GEMV rung: 9-16 rows (its 16-row path) with n a multiple of 32 but not 64 (its 32-column
// blocks) and n 48 (16-column), 5 k tiles for 16 warps and 18; k 8192, 8 k tiles for each of its
// 16 warps, past the 6- and 3-stage rings; and n 8448 at m 16, 64-column blocks for 132 SMs.
std::vector<Problem> check_cases(const Op& op) {
  const std::vector<std::array<int64_t, 4>> shapes = {{1, 16, 64, 64},    {7, 48, 192, 64},    {33, 272, 128, 128},
                                                      {127, 272, 64, 64}, {130, 48, 384, 128}, {1000, 32, 256, 128},
                                                      {5, 64, 1408, 128}, {40, 128, 704, 64},  {13, 96, 320, 64},
                                                      {16, 48, 1152, 128}, {3, 64, 8192, 128}, {16, 8448, 64, 64}};
  std::vector<Problem> out;
  for (DType t : {DType::f16, DType::bf16})
    for (const char* zero : {"none", "gptq", "awq"})
      for (const auto& s : shapes)
        out.push_back(make_problem(op, t, {{"m", s[0]}, {"n", s[1]}, {"k", s[2]}}, {{"group", std::to_string(s[3])}, {"zero", zero}}));
  return out;
}
}  // namespace

Op make_gemm_w4a16_op() {
  Op op;
  op.name = "gemm_w4a16";
  op.summary = "D = A * dequant(W)^T: fp16/bf16 activations, int4 weights quantized per group along k (symmetric, GPTQ "
               "integer or AWQ float zero points), the weights also packed in mma.sync's fragment order";
  op.counting = "2*m*n*k FLOPs (dequantization not counted); bytes: A and D in the dtype read/written once, W at 4 bits "
                "(W and W_packed are one weight: counted once), the scales in the dtype and the zeros (GPTQ 4 bits, AWQ "
                "the dtype) once per group";
  op.dims = {{"m", 16, "rows of A and D (tokens)"},
             {"n", 4096, "output features: rows of W, columns of D (a multiple of 16)", false},
             {"k", 4096, "the reduction: columns of A and W (a multiple of the group)", false}};
  op.opts = {{"group", {"128", "64"}, "128", "weights per scale (and zero point) along k"},
             {"zero", {"none", "gptq", "awq"}, "none",
              "none: symmetric, s*v; gptq: an int4 zero code, s*(code - q_z); awq: a float zero, s*code - z"}};
  op.dtypes = {DType::f16, DType::bf16};
  op.validate = validate;
  op.parse = [](const Problem& p) -> std::any { return params_of(p); };
  op.cost = cost;
  op.inputs = inputs;
  op.derived_inputs = w4a16_quantized_weights;
  op.outputs = [](const Problem& p) { return std::vector<TensorSpec>{{"D", p.dtype, {p.dim("m"), p.dim("n")}, {}}}; };
  op.reference = reference;
  op.dtype_baseline = dtype_baseline;
  op.check_cases = check_cases;
  // Decode-sized (16 tokens: weight bytes dominate) in each dtype, with each kind of zero point.
  op.report_cases = [](const Op& self) {
    const std::map<std::string, int64_t> d = {{"m", 16}, {"n", 2048}, {"k", 2048}};
    return std::vector<Problem>{make_problem(self, DType::f16, d, {{"zero", "gptq"}}), make_problem(self, DType::bf16, d, {{"zero", "awq"}})};
  };
  // Decode-sized (m 16) and small enough to simulate in seconds; one block tile's columns, one split.
  op.profile_cases = [](const Op& self) {
    return std::vector<Problem>{make_problem(self, DType::f16, {{"m", 16}, {"n", 64}, {"k", 256}}, {{"zero", "gptq"}})};
  };
  // Tolerance: 4 units of the dtype's roundoff plus twice dtype_baseline's error (the harness's rule).
  op.tolerance = [](const Problem& p) { return default_tolerance(p.dtype); };
  op.error_per_row = false;  // over the whole D, as gemm: a row of n may cancel
  op.variants = KL_CPU_ISA_VARIANTS(gemm_w4a16_cpu_variants);
  return op;
}

}  // namespace kl
