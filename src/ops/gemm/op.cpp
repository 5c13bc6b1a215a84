#include "ops/gemm/gemm.h"

#include "ops/ops.h"
#include "ops/rowwise.h"

namespace kl {

namespace {
GemmEpilogue epilogue_of(const Problem& p) {
  const std::string e = p.opt("epilogue");
  return e == "bias" ? GemmEpilogue::bias : e == "bias_gelu" ? GemmEpilogue::bias_gelu : e == "bias_silu" ? GemmEpilogue::bias_silu
                                                                                                           : GemmEpilogue::none;
}

std::vector<std::vector<double>> reference(const Problem& p, std::span<const Tensor> in) {
  const int64_t m = p.dim("m"), n = p.dim("n"), k = p.dim("k");
  const double alpha = p.opt_number("alpha"), beta = p.opt_number("beta");
  const std::vector<double> a = to_doubles(in[0]), b = to_doubles(in[1]), c = to_doubles(in[2]);
  const GemmEpilogue epi = epilogue_of(p);
  const bool residual = p.opt_flag("residual");
  const size_t next = epi == GemmEpilogue::none ? 3 : 4;
  const std::vector<double> bias = epi == GemmEpilogue::none ? std::vector<double>{} : to_doubles(in[3]);
  const std::vector<double> r = residual ? to_doubles(in[next]) : std::vector<double>{};
  std::vector<double> d(static_cast<size_t>(m * n));
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < m; ++i) {
    std::vector<double> acc(static_cast<size_t>(n), 0.0);
    for (int64_t l = 0; l < k; ++l) {
      const double ail = a[i * k + l];
      for (int64_t j = 0; j < n; ++j) acc[j] += ail * b[l * n + j];
    }
    for (int64_t j = 0; j < n; ++j) {
      double v = alpha * acc[j] + (beta != 0 ? beta * c[i * n + j] : 0.0);
      if (epi != GemmEpilogue::none) v = apply_activation(epi, v + bias[j]);
      d[i * n + j] = residual ? v + r[i * n + j] : v;
    }
  }
  return reference_outputs(std::move(d));
}

std::vector<Problem> check_cases(const Op& op) {
  const std::vector<std::array<int64_t, 3>> shapes = {{1, 1, 1},     {1, 7, 33},    {7, 1, 127},  {33, 127, 7},
                                                      {127, 33, 1000}, {1000, 7, 33}, {64, 64, 64}, {129, 65, 257},
                                                      {33, 1000, 127}, {33, 132, 68},  {130, 260, 36},
                                                      {201, 264, 520}, {1, 136, 72},  {127, 8, 1000},
                                                      {17, 136, 2056}};  // k >= 2048: split-K cuts it in 2
  // From {33, 132, 68} on k and n are multiples of 4; from {201, 264, 520} of 8 (16-byte rows: cp.async, TMA).
  std::vector<Problem> out;
  for (DType t : float_dtypes())
    for (const char* la : {"row", "col"})
      for (const char* lb : {"row", "col"})
        for (const auto& s : shapes) {
          std::map<std::string, std::string> opts = {{"a_layout", la}, {"b_layout", lb}};
          if (s[0] % 2 == 1) opts.insert({{"alpha", "0.5"}, {"beta", "-1.5"}});  // half the shapes read C
          out.push_back(make_problem(op, t, {{"m", s[0]}, {"n", s[1]}, {"k", s[2]}}, opts));
        }
  // Each epilogue, with and without the residual, B in both layouts (the Hopper rungs take B column-major).
  for (DType t : float_dtypes())
    for (const char* lb : {"row", "col"})
      for (const char* epi : {"none", "bias", "bias_gelu", "bias_silu"})
        for (const char* res : {"0", "1"}) {
          if (std::string(epi) == "none" && std::string(res) == "0") continue;
          for (const auto& s : std::vector<std::array<int64_t, 3>>{{7, 33, 127}, {130, 136, 264}})
            out.push_back(make_problem(op, t, {{"m", s[0]}, {"n", s[1]}, {"k", s[2]}},
                                       {{"b_layout", lb}, {"epilogue", epi}, {"residual", res}, {"alpha", "0.5"}, {"beta", "-1.5"}}));
        }
  return out;
}
}  // namespace

Op make_gemm_op() {
  Op op;
  op.name = "gemm";
  op.summary = "D = act(alpha*A*B + beta*C + bias) + R with fp32 accumulation; A, B row- or column-major; the epilogue optional";
  op.counting = "2*m*n*k FLOPs (one multiply and one add per term; alpha/beta and the epilogue not counted); bytes: A, B read "
                "once, C read once when beta != 0, the bias (n) and R (m*n) once when given, D written once";
  op.dims = {{"m", 1024, "rows of A and D"}, {"n", 1024, "columns of B and D"}, {"k", 1024, "the reduction length"}};
  op.opts = {{"alpha", {}, "1", "scales A*B"},
             {"beta", {}, "0", "scales C (C is not read when 0)"},
             {"a_layout", {"row", "col"}, "row", "storage order of A"},
             {"b_layout", {"row", "col"}, "row", "storage order of B"},
             {"epilogue", {"none", "bias", "bias_gelu", "bias_silu"}, "none",
              "after alpha*A*B + beta*C: add a bias along rows, then gelu (erf form) or silu"},
             {"residual", {"0", "1"}, "0", "add a residual R (m x n) last"}};
  op.dtypes = float_dtypes();
  op.parse = [](const Problem& p) -> std::any {
    return GemmParams{p.dim("m"), p.dim("n"), p.dim("k"), p.opt_number("alpha"), p.opt_number("beta"),
                      p.opt("a_layout") == "col", p.opt("b_layout") == "col",
                      p.dtype_of("A"), p.dtype_of("B"), p.dtype_of("C"), p.dtype_of("D"), epilogue_of(p),
                      p.opt_flag("residual")};
  };
  op.cost = [](const Problem& p) {
    const double m = static_cast<double>(p.dim("m")), n = static_cast<double>(p.dim("n")), k = static_cast<double>(p.dim("k"));
    const double e = dtype_bits(p.dtype) / 8.0;
    const double c_reads = p.opt_number("beta") != 0 ? 1 : 0, bias = p.opt("epilogue") != "none" ? n : 0;
    const double r_reads = p.opt_flag("residual") ? 1 : 0;
    return Cost{2 * m * n * k, (m * k + k * n + (1 + c_reads + r_reads) * m * n + bias) * e};
  };
  op.inputs = [](const Problem& p) {
    const int64_t m = p.dim("m"), n = p.dim("n"), k = p.dim("k");
    std::vector<TensorSpec> t = {{"A", p.dtype, {m, k}, matrix_strides(m, k, p.opt("a_layout"))},
                                 {"B", p.dtype, {k, n}, matrix_strides(k, n, p.opt("b_layout"))},
                                 {"C", p.dtype, {m, n}, {}}};
    if (p.opt("epilogue") != "none") t.push_back({"bias", p.dtype, {n}, {}});
    if (p.opt_flag("residual")) t.push_back({"R", p.dtype, {m, n}, {}});
    return t;
  };
  op.outputs = [](const Problem& p) { return std::vector<TensorSpec>{{"D", p.dtype, {p.dim("m"), p.dim("n")}, {}}}; };
  op.reference = reference;
  op.check_cases = check_cases;
  op.report_cases = [](const Op& self) {
    return std::vector<Problem>{make_problem(self, DType::f32, {{"m", 512}, {"n", 512}, {"k", 512}}),
                                make_problem(self, DType::bf16, {{"m", 512}, {"n", 512}, {"k", 512}})};
  };
  // Small enough to simulate in seconds, two 128x128 tiles wide: each rung's access pattern shows.
  op.profile_cases = [](const Op& self) {
    return std::vector<Problem>{make_problem(self, DType::f32, {{"m", 256}, {"n", 256}, {"k", 256}}),
                                make_problem(self, DType::bf16, {{"m", 256}, {"n", 256}, {"k", 256}}),
                                make_problem(self, DType::bf16, {{"m", 256}, {"n", 256}, {"k", 256}}, {{"b_layout", "col"}}),
                                make_problem(self, DType::bf16, {{"m", 256}, {"n", 256}, {"k", 256}},
                                             {{"epilogue", "bias_gelu"}, {"residual", "1"}})};  // fused against unfused
  };
  op.tolerance = [](const Problem& p) { return default_tolerance(p.dtype); };
  op.error_per_row = false;
  op.variants = KL_CPU_ISA_VARIANTS(gemm_cpu_variants);
  return op;
}

}  // namespace kl
