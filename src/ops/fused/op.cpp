#include "jit/presets.h"
#include "kernelab/error.h"
#include "kernelab/rng.h"
#include "ops/fused/fused.h"
#include "ops/ops.h"
#include "ops/rowwise.h"

namespace kl {

namespace {

jit::FuseDType fuse_dtype(DType t) {
  return t == DType::f16 ? jit::FuseDType::fp16 : t == DType::bf16 ? jit::FuseDType::bf16 : jit::FuseDType::fp32;
}

// --expr as a named expression (with its row vectors) or as written (with --vector's).
jit::Program program_of(const Problem& p) {
  const jit::Expression e = jit::resolve_expression(p.opt("expr"), jit::split_names(p.opt("vector")));
  return jit::parse(e.text, e.vectors);
}

Shape shape_of(jit::Kind k, int64_t rows, int64_t cols) {
  if (k == jit::Kind::row) return {rows};
  if (k == jit::Kind::col) return {cols};
  return {rows, cols};
}

void fill_input(Tensor& t, uint64_t seed, bool positive) {
  Rng rng(seed);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, jit::draw_input(rng, positive));
}

std::vector<std::vector<double>> reference(const Problem& problem, std::span<const Tensor> in) {
  const FusedParams& f = problem.as<FusedParams>();
  std::vector<std::vector<double>> inputs;
  for (const Tensor& t : in) inputs.push_back(to_doubles(t));
  return jit::evaluate(f.program, inputs, f.rows, f.cols);
}

// FLOPs: one per element of every node that computes (a function or a reduction step counts one).
double flops(const FusedParams& f) {
  double n = 0;
  for (const jit::Node& node : f.program.nodes)
    if (!jit::is_leaf(node.op) && node.op != jit::OpCode::copy)
      n += double(jit::elements(jit::is_reduction(node.op) ? jit::Kind::full : node.kind, f.rows, f.cols));
  return n;
}

}  // namespace

Op make_fused_op() {
  Op op;
  op.name = "fused";
  op.summary = "an elementwise and row-reduction expression (kernelab fuse's language), its kernels generated at run time";
  op.counting = "FLOPs: one per element each computing node produces (a function such as exp or erf counts one, a reduction one "
                "per element it reads); bytes: each input read once and each output written once (the fused schedule's)";
  op.dims = rows_cols_dims();
  op.opts = {{"expr", {}, "rmsnorm_residual",
              "the expression, or a named one: softmax_causal, layernorm, rmsnorm_residual, bias_gelu, swiglu", false, true},
             {"vector", {}, "", "the inputs that are row vectors of length cols, NAME[,NAME...] (a named expression brings its own)",
              false, true}};
  op.dtypes = float_dtypes();
  op.validate = [](const Problem& p) {
    if (p.dim("rows") >= (int64_t{1} << 31) || p.dim("cols") >= (int64_t{1} << 31))
      bad_input("fused: rows and cols must each be below 2^31 (the generated kernels index rows and columns with int)");
    program_of(p);  // BadInput naming the column of a malformed expression
  };
  op.parse = [](const Problem& p) -> std::any {
    return FusedParams{program_of(p), fuse_dtype(p.dtype), p.dim("rows"), p.dim("cols")};
  };
  op.cost = [](const Problem& p) {
    const FusedParams& f = p.as<FusedParams>();
    return Cost{flops(f), double(jit::bytes_fused(f.program, f.rows, f.cols, dtype_bits(p.dtype) / 8))};
  };
  op.inputs = [](const Problem& p) {
    const FusedParams& f = p.as<FusedParams>();
    std::vector<TensorSpec> specs;
    for (std::size_t i = 0; i < f.program.inputs.size(); ++i) {
      TensorSpec s{f.program.inputs[i].name, p.dtype, shape_of(f.program.inputs[i].kind, f.rows, f.cols), {}};
      const bool positive = jit::feeds_positive_only(f.program, int(i));
      s.fill = [positive](Tensor& t, uint64_t seed) { fill_input(t, seed, positive); };
      specs.push_back(std::move(s));
    }
    return specs;
  };
  op.outputs = [](const Problem& p) {
    const FusedParams& f = p.as<FusedParams>();
    std::vector<TensorSpec> specs;
    for (const jit::Tensor& o : f.program.outputs) specs.push_back({o.name, p.dtype, shape_of(o.kind, f.rows, f.cols), {}});
    return specs;
  };
  op.reference = reference;
  op.check_cases = [](const Op& self) {
    // The named expressions and one written here (a row vector, two reductions, a per-row output).
    std::vector<std::map<std::string, std::string>> exprs;
    for (const jit::Preset& e : jit::kPresets) exprs.push_back({{"expr", e.name}});
    exprs.push_back({{"expr", "s = rowmax(a * c) - rowmean(b); y = tanh(a - s / 7) * max(c, b); t = s * 2"}, {"vector", "c"}});
    std::vector<Problem> out;
    for (const auto& opts : exprs) {
      // 1000 tall rows only for the written expression: a block a row simulates one block per row
      const int64_t tall = &opts == &exprs.back() ? 1000 : 333;
      for (DType t : float_dtypes())
        // every edge size (1, 7, 33, 127, 1000) in rows and in cols, and a row longer than the shared-memory stage
        for (auto [r, c] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {7, 33}, {33, 7}, {127, 1000}, {tall, 127}, {3, 13000}})
          out.push_back(make_problem(self, t, {{"rows", r}, {"cols", c}}, opts));
    }
    return out;
  };
  op.report_cases = [](const Op& self) {
    std::vector<Problem> out;
    for (const jit::Preset& e : jit::kPresets)
      out.push_back(make_problem(self, DType::bf16, {{"rows", 4096}, {"cols", 4096}}, {{"expr", e.name}}));
    return out;
  };
  // Small enough to profile in seconds: the unfused chain's intermediates against one read of each input.
  op.profile_cases = [](const Op& self) {
    return std::vector<Problem>{make_problem(self, DType::bf16, {{"rows", 64}, {"cols", 1024}}, {{"expr", "rmsnorm_residual"}})};
  };
  // `kernelab fuse`'s: a few roundings of the dtype (the unfused chain rounds every intermediate).
  op.tolerance = [](const Problem& p) { return jit::fuse_tolerance(fuse_dtype(p.dtype)); };
  op.error_per_row = false;
  op.variants = fused_cpu_variants();
  for (Variant& v : fused_cuda_variants()) op.variants.push_back(std::move(v));
  return op;
}

}  // namespace kl
