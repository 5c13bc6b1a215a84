#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "kernelab/error.h"
#include "ops/attention/attention.h"
#include "ops/cpu_math.h"
#include "ops/ops.h"

namespace kl {

double attention_sequence_flops(const AttentionParams& p, int64_t b) {
  const double sq = double(p.seq_q(b)), sk = double(p.seq_kv(b));
  double avg = sk;
  if (p.window >= 0) {
    double seen = 0;
    for (int64_t i = 0; i < p.seq_q(b); ++i) {
      const auto [first, last] = p.visible(b, i);
      seen += double(last - first);
    }
    avg = seen / sq;
  } else if (p.causal) {
    avg = (std::max(0.0, sk - sq) + sk) / 2;
  }
  return 2 * sq * avg * double(p.head_dim + p.head_dim_v);
}

// --seqlens "L1,L2,..." (and --seqlens-kv) set the batch and the longest lengths.
void attention_derive(Problem& p, const std::map<std::string, int64_t>& given) {
  if (p.opt("seqlens").empty()) {
    if (!p.opt("seqlens_kv").empty()) bad_input("--seqlens-kv needs --seqlens (the query lengths, one per sequence)");
  } else {
    const std::vector<int64_t> q = parse_positive_list(p.opt("seqlens"));
    const std::vector<int64_t> kv = p.opt("seqlens_kv").empty() ? q : parse_positive_list(p.opt("seqlens_kv"));
    if (kv.size() != q.size())
      bad_input(fmt::format("--seqlens has {} sequences and --seqlens-kv {}: one length each per sequence", q.size(), kv.size()));
    const std::map<std::string, int64_t> derived = {{"batch", int64_t(q.size())},
                                                    {"seq_q", *std::max_element(q.begin(), q.end())},
                                                    {"seq_kv", *std::max_element(kv.begin(), kv.end())}};
    for (const auto& [d, v] : derived) {
      if (given.count(d) && given.at(d) != v)
        bad_input(fmt::format("--seqlens sets {} to {}, and --{} says {}: give one or the other", d, v,
                              d == "batch" ? "batch" : d == "seq_q" ? "seq-q" : "seq-kv", given.at(d)));
      p.dims[d] = v;
    }
  }
  if (!given.count("head_dim_v")) p.dims["head_dim_v"] = p.dim("head_dim");
}

void attention_validate(const Problem& p) {
  if (p.dim("heads") % p.dim("kv_heads") != 0)
    bad_input(fmt::format("--heads={} is not a multiple of --kv-heads={} (GQA shares each kv head among a whole group of "
                          "query heads)", p.dim("heads"), p.dim("kv_heads")));
  if (!p.opt("scale").empty() && !(p.opt_number("scale") > 0))
    bad_input(fmt::format("--scale={} must be positive", p.opt("scale")));
  if (!p.opt("window").empty()) {
    const double w = p.opt_number("window");
    if (w < 0 || w != std::floor(w)) bad_input(fmt::format("--window={} must be a whole number of keys, 0 or more", p.opt("window")));
  }
}

namespace {
std::vector<int64_t> offsets(const Problem& p, const char* list, const char* dim) {
  std::vector<int64_t> lengths = parse_positive_list(p.opt(list));
  if (std::string(list) == "seqlens_kv" && lengths.empty()) lengths = parse_positive_list(p.opt("seqlens"));
  if (lengths.empty()) lengths.assign(size_t(p.dim("batch")), p.dim(dim));
  std::vector<int64_t> start = {0};
  for (int64_t l : lengths) start.push_back(start.back() + l);
  return start;
}

}  // namespace

AttentionParams attention_params(const Problem& p) {
  AttentionParams a;
  a.batch = p.dim("batch"), a.heads = p.dim("heads"), a.kv_heads = p.dim("kv_heads");
  a.head_dim = p.dim("head_dim"), a.head_dim_v = p.dim("head_dim_v");
  a.q_start = offsets(p, "seqlens", "seq_q");
  a.kv_start = offsets(p, "seqlens_kv", "seq_kv");
  a.scale = p.opt("scale").empty() ? 1 / std::sqrt(double(a.head_dim)) : p.opt_number("scale");
  a.causal = p.opt_flag("causal");
  a.window = p.opt("window").empty() ? -1 : int64_t(p.opt_number("window"));
  a.dtype = p.dtype;
  return a;
}

namespace {
// O and LSE in float64 from the inputs' exact values. `rounding` rounds each intermediate as a
// naive implementation in the input dtype would (identity for the reference).
template <class Round>
std::vector<std::vector<double>> attend(const AttentionParams& a, const std::vector<double>& q, const std::vector<double>& k,
                                        const std::vector<double>& v, Round rounding) {
  std::vector<double> o(size_t(a.total_q() * a.heads * a.head_dim_v), 0.0), lse(size_t(a.heads * a.total_q()), INFINITY);
#pragma omp parallel for collapse(2) schedule(dynamic)
  for (int64_t b = 0; b < a.batch; ++b)
    for (int64_t h = 0; h < a.heads; ++h) {
      const int64_t g = h / a.group();
      std::vector<double> s(size_t(a.seq_kv(b))), acc(size_t(a.head_dim_v)), qs(size_t(a.head_dim));
      for (int64_t i = 0; i < a.seq_q(b); ++i) {
        const int64_t tq = a.q_start[b] + i;
        const auto [first, last] = a.visible(b, i);
        if (first == last) continue;
        for (int64_t c = 0; c < a.head_dim; ++c) qs[size_t(c)] = rounding.scaled_q(q[a.q_row(tq, h) + c] * a.scale);
        double m = -INFINITY;
        for (int64_t j = first; j < last; ++j) {
          const int64_t tk = a.kv_start[b] + j;
          double dot = 0;
          for (int64_t c = 0; c < a.head_dim; ++c) dot += qs[size_t(c)] * k[a.k_row(tk, g) + c];
          s[j] = rounding.score(dot);
          m = std::max(m, s[j]);
        }
        double sum = 0;
        for (int64_t j = first; j < last; ++j) sum += std::exp(s[j] - m);
        lse[h * a.total_q() + tq] = rounding.lse(m + std::log(sum));
        // q * scale and each probability once, then every output column summed over j in order.
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = first; j < last; ++j) {
          const double pj = rounding.probability(std::exp(s[j] - m) / sum);
          const double* vj = &v[a.v_row(a.kv_start[b] + j, g)];
          for (int64_t c = 0; c < a.head_dim_v; ++c) acc[c] += pj * vj[c];
        }
        for (int64_t c = 0; c < a.head_dim_v; ++c) o[a.o_row(tq, h) + c] = rounding.output(acc[c]);
      }
    }
  return reference_outputs(std::move(o), std::move(lse));
}

struct Exact {
  double scaled_q(double x) const { return x; }
  double score(double x) const { return x; }
  double lse(double x) const { return x; }
  double probability(double x) const { return x; }
  double output(double x) const { return x; }
};

// Naive attention in the input dtype, as FlashAttention's tests run it in PyTorch: q * scale, the
// scores, the probabilities and O each rounded to the dtype (the products accumulated in fp32
// arithmetic, modelled here by rounding the double sums), the LSE in fp32.
template <class T>
struct InDtype {
  static double r(double x) { return cpu::to_float(cpu::from_float<T>(float(x))); }
  double scaled_q(double x) const { return r(x); }
  double score(double x) const { return r(x); }
  double lse(double x) const { return double(float(x)); }
  double probability(double x) const { return r(x); }
  double output(double x) const { return r(x); }
};
}  // namespace

std::vector<std::vector<double>> attention_forward_f64(const AttentionParams& a, const std::vector<double>& q,
                                                       const std::vector<double>& k, const std::vector<double>& v) {
  return attend(a, q, k, v, Exact{});
}

std::vector<std::vector<double>> attention_forward_in_dtype(const AttentionParams& a, std::span<const Tensor> in) {
  std::vector<std::vector<double>> out;
  cpu::with_float_type(a.dtype, [&](auto t) {
    out = attend(a, to_doubles(in[0]), to_doubles(in[1]), to_doubles(in[2]), InDtype<decltype(t)>{});
  });
  return out;
}

std::vector<Problem> attention_check_cases(const Op& op, const std::map<std::string, std::string>& extra) {
  using Dims = std::map<std::string, int64_t>;
  using Opts = std::map<std::string, std::string>;
  struct Case {
    Dims dims;
    Opts opts;
  };
  const auto shape = [](int64_t sq, int64_t sk, int64_t h, int64_t hkv, int64_t d) {
    return Dims{{"batch", 2}, {"seq_q", sq}, {"seq_kv", sk}, {"heads", h}, {"kv_heads", hkv}, {"head_dim", d}};
  };
  std::vector<Case> cases;
  // Lengths of 1, odd and off every tile, s_q above and below s_kv, with and without the causal mask.
  for (auto [sq, sk] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {7, 7}, {33, 127}, {127, 33}, {1000, 7}, {7, 1000}, {1, 1000}, {127, 127}})
    for (const char* causal : {"0", "1"}) cases.push_back({shape(sq, sk, 2, 2, 64), {{"causal", causal}}});
  cases.push_back({shape(33, 127, 8, 1, 64), {{"causal", "1"}}});   // MQA: 8 query heads on one kv head
  cases.push_back({shape(127, 33, 8, 2, 64), {}});                  // GQA 4
  cases.push_back({shape(33, 33, 2, 1, 128), {{"causal", "1"}}});   // head dims 128, 256, and 192/128
  cases.push_back({shape(127, 60, 4, 2, 128), {}});                 // (and d 128 with the op's options)
  cases.push_back({shape(33, 127, 2, 2, 256), {{"causal", "1"}}});
  {
    Dims d = shape(33, 33, 2, 2, 192);
    d["head_dim_v"] = 128;
    cases.push_back({d, {}});
  }
  cases.push_back({shape(127, 127, 2, 2, 64), {{"causal", "1"}, {"window", "16"}}});  // sliding windows
  cases.push_back({shape(33, 127, 2, 2, 64), {{"window", "8"}}});
  cases.push_back({shape(33, 33, 2, 2, 64), {{"scale", "0.5"}}});
  cases.push_back({{{"heads", 4}, {"kv_heads", 2}, {"head_dim", 64}}, {{"seqlens", "1,17,300"}, {"causal", "1"}}});  // variable length
  cases.push_back({{{"heads", 2}, {"kv_heads", 1}, {"head_dim", 64}}, {{"seqlens", "5,1,64"}, {"seqlens_kv", "40,1,128"}, {"causal", "1"}}});
  cases.push_back({{{"batch", 1}, {"seq_q", 1000}, {"seq_kv", 1000}, {"heads", 1}, {"kv_heads", 1}, {"head_dim", 64}}, {{"causal", "1"}}});
  std::vector<Problem> out;
  for (DType t : {DType::f16, DType::bf16, DType::f32})
    for (size_t i = 0; i < cases.size(); ++i) {
      Opts o = cases[i].opts;
      if (i % 2 == 1) o.insert(extra.begin(), extra.end());  // the op's own options on half the cases
      out.push_back(make_problem(op, t, cases[i].dims, o));
    }
  return out;
}

std::vector<DimSpec> attention_dims() {
  return {{"batch", 2, "sequences (set by --seqlens when given)", false},
          {"seq_q", 512, "queries per sequence (the longest, with --seqlens)"},
          {"seq_kv", 512, "keys per sequence (the longest, with --seqlens)"},
          {"heads", 8, "query heads", false},
          {"kv_heads", 8, "key/value heads (GQA: heads is a multiple; 1: MQA)", false},
          {"head_dim", 64, "d: length of a query and key vector", false},
          {"head_dim_v", 64, "dv: length of a value vector (default: head_dim)", false}};
}

std::vector<OptSpec> attention_opts() {
  return {{"causal", {"0", "1"}, "0", "hide keys after the query's position (bottom-right aligned when s_q != s_kv)"},
          {"scale", {}, "", "multiplies Q K^T (default 1/sqrt(head_dim))"},
          {"window", {}, "", "sliding window W: hide keys more than W before the query's position (and after it, without --causal)"},
          {"seqlens", {}, "", "variable length: the query lengths L1,L2,... packed end to end (sets --batch, --seq-q, --seq-kv)", true},
          {"seqlens_kv", {}, "", "the key lengths, one per sequence (default: --seqlens)", true}};
}

Op make_attention_op() {
  Op op;
  op.name = "attention";
  op.summary = "prefill attention forward: O = softmax(scale Q K^T + mask) V and the LSE per row; causal (bottom-right), "
               "sliding window, GQA/MQA, variable length";
  op.counting = "FlashAttention-3's benchmark count: 2 * s_q * avg * (d + dv) per sequence and query head, avg = s_kv, "
                "(max(0, s_kv - s_q) + s_kv) / 2 causal, the mean keys in the window with --window (so 4 b h s_q s_kv d "
                "unmasked, half of it causal at s_q = s_kv); bytes: Q, K, V read once, O and the fp32 LSE written once";
  op.dims = attention_dims();
  op.opts = attention_opts();
  op.dtypes = {DType::f32, DType::f16, DType::bf16};
  op.derive = attention_derive;
  op.validate = attention_validate;
  op.parse = [](const Problem& p) -> std::any { return attention_params(p); };
  op.cost = [](const Problem& p) {
    const AttentionParams a = attention_params(p);
    double flops = 0;
    for (int64_t b = 0; b < a.batch; ++b) flops += double(a.heads) * attention_sequence_flops(a, b);
    const double e = dtype_bits(p.dtype) / 8.0;
    const double qo = double(a.total_q() * a.heads) * double(a.head_dim + a.head_dim_v);
    const double kv = double(a.total_kv() * a.kv_heads) * double(a.head_dim + a.head_dim_v);
    return Cost{flops, (qo + kv) * e + 4.0 * double(a.heads * a.total_q())};
  };
  op.inputs = [](const Problem& p) {
    const AttentionParams a = attention_params(p);
    return std::vector<TensorSpec>{{"Q", p.dtype, {a.total_q(), a.heads, a.head_dim}, {}},
                                   {"K", p.dtype, {a.total_kv(), a.kv_heads, a.head_dim}, {}},
                                   {"V", p.dtype, {a.total_kv(), a.kv_heads, a.head_dim_v}, {}}};
  };
  op.outputs = [](const Problem& p) {
    const AttentionParams a = attention_params(p);
    return std::vector<TensorSpec>{{"O", p.dtype, {a.total_q(), a.heads, a.head_dim_v}, {}},
                                   {"LSE", DType::f32, {a.heads, a.total_q()}, {}}};
  };
  op.reference = [](const Problem& p, std::span<const Tensor> in) {
    return attention_forward_f64(p.as<AttentionParams>(), to_doubles(in[0]), to_doubles(in[1]), to_doubles(in[2]));
  };
  op.dtype_baseline = [](const Problem& p, std::span<const Tensor> in) { return attention_forward_in_dtype(p.as<AttentionParams>(), in); };
  op.check_cases = [](const Op& self) { return attention_check_cases(self, {}); };
  op.report_cases = [](const Op& self) {
    const std::map<std::string, int64_t> d = {{"batch", 1}, {"seq_q", 1024}, {"seq_kv", 1024}, {"heads", 8}, {"kv_heads", 8}, {"head_dim", 128}};
    return std::vector<Problem>{make_problem(self, DType::bf16, d), make_problem(self, DType::bf16, d, {{"causal", "1"}})};
  };
  // Small enough to simulate in seconds: S (2 x 128 x 128 floats) against the flash rungs' nothing.
  op.profile_cases = [](const Op& self) {
    return std::vector<Problem>{make_problem(
        self, DType::f16, {{"batch", 1}, {"seq_q", 128}, {"seq_kv", 128}, {"heads", 2}, {"kv_heads", 2}, {"head_dim", 64}})};
  };
  // fp32 outputs over a few hundred terms per row; the half formats follow FlashAttention's rule (dtype_baseline).
  op.tolerance = [](const Problem& p) { return default_tolerance(p.dtype); };
  op.variants = KL_CPU_ISA_VARIANTS(attention_cpu_variants);
  return op;
}

}  // namespace kl
