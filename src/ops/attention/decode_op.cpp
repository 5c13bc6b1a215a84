#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <numeric>

#include "kernelab/error.h"
#include "kernelab/rng.h"
#include "ops/attention/decode.h"
#include "ops/ops.h"

namespace kl {

int64_t DecodeParams::max_pages() const {
  int64_t n = 0;
  for (int64_t b = 0; b < batch; ++b) n = std::max(n, pages_of(b));
  return n;
}
int64_t DecodeParams::total_pages() const {
  int64_t n = 0;
  for (int64_t b = 0; b < batch; ++b) n += pages_of(b);
  return n;
}
int64_t DecodeParams::longest() const { return *std::max_element(lens.begin(), lens.end()); }

AttentionParams DecodeParams::as_attention() const {
  AttentionParams a;
  a.batch = batch, a.heads = heads, a.kv_heads = kv_heads, a.head_dim = head_dim, a.head_dim_v = head_dim_v;
  a.q_start = {0}, a.kv_start = {0};
  for (int64_t b = 0; b < batch; ++b) a.q_start.push_back(a.q_start.back() + new_tokens), a.kv_start.push_back(a.kv_start.back() + lens[size_t(b)]);
  a.scale = scale, a.causal = true, a.dtype = dtype;
  return a;
}

namespace {

constexpr int64_t kMaxNewTokens = 8, kMaxPageSize = 256;

DecodeParams decode_params(const Problem& p) {
  DecodeParams d;
  d.batch = p.dim("batch"), d.new_tokens = p.dim("seq_q"), d.heads = p.dim("heads"), d.kv_heads = p.dim("kv_heads");
  d.head_dim = p.dim("head_dim"), d.head_dim_v = p.dim("head_dim_v");
  d.page_size = int64_t(p.opt_number("page_size"));
  d.lens = parse_positive_list(p.opt("seqlens_kv"));
  if (d.lens.empty()) d.lens.assign(size_t(d.batch), p.dim("seq_kv"));
  d.scale = p.opt("scale").empty() ? 1 / std::sqrt(double(d.head_dim)) : p.opt_number("scale");
  d.splits = p.opt("splits").empty() ? 0 : int64_t(p.opt_number("splits"));
  d.dtype = p.dtype;
  return d;
}

void derive(Problem& p, const std::map<std::string, int64_t>& given) {
  if (!p.opt("seqlens_kv").empty()) {
    const std::vector<int64_t> lens = parse_positive_list(p.opt("seqlens_kv"));
    const std::map<std::string, int64_t> derived = {{"batch", int64_t(lens.size())}, {"seq_kv", *std::max_element(lens.begin(), lens.end())}};
    for (const auto& [d, v] : derived) {
      if (given.count(d) && given.at(d) != v)
        bad_input(fmt::format("--seqlens-kv sets {} to {}, and --{} says {}: give one or the other", d, v, d == "batch" ? "batch" : "seq-kv",
                              given.at(d)));
      p.dims[d] = v;
    }
  }
  if (!given.count("head_dim_v")) p.dims["head_dim_v"] = p.dim("head_dim");
}

void validate(const Problem& p) {
  if (p.dim("heads") % p.dim("kv_heads") != 0)
    bad_input(fmt::format("--heads={} is not a multiple of --kv-heads={} (GQA shares each kv head among a whole group of query heads)",
                          p.dim("heads"), p.dim("kv_heads")));
  if (p.dim("seq_q") > kMaxNewTokens)
    bad_input(fmt::format("--seq-q={}: decode takes 1 to {} new tokens per sequence (more is a prefill: kernelab run attention)",
                          p.dim("seq_q"), kMaxNewTokens));
  const double ps = p.opt_number("page_size");
  if (!(ps >= 1 && ps <= kMaxPageSize && ps == std::floor(ps)))
    bad_input(fmt::format("--page-size={}: a page holds 1 to {} tokens", p.opt("page_size"), kMaxPageSize));
  if (!p.opt("splits").empty()) {
    const double s = p.opt_number("splits");
    if (!(s >= 1 && s <= 1024 && s == std::floor(s))) bad_input(fmt::format("--splits={}: 1 to 1024 splits of the keys", p.opt("splits")));
  }
  if (!p.opt("scale").empty() && !(p.opt_number("scale") > 0)) bad_input(fmt::format("--scale={} must be positive", p.opt("scale")));
  const std::vector<int64_t> lens = p.opt("seqlens_kv").empty() ? std::vector<int64_t>{p.dim("seq_kv")} : parse_positive_list(p.opt("seqlens_kv"));
  for (int64_t l : lens)
    if (l < p.dim("seq_q"))
      bad_input(fmt::format("a context of {} tokens cannot hold {} new ones (--seq-q): every cache length must be at least --seq-q", l,
                            p.dim("seq_q")));
}

// The block table: the cache's pages dealt to the sequences in a random order; -1 past a sequence's pages.
void fill_block_table(const DecodeParams& d, Tensor& t, uint64_t seed) {
  std::vector<int64_t> pages(size_t(d.total_pages()));
  std::iota(pages.begin(), pages.end(), 0);
  Rng rng(seed);
  for (size_t i = pages.size(); i > 1; --i) std::swap(pages[i - 1], pages[rng.next() % i]);
  size_t next = 0;
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t k = 0; k < d.max_pages(); ++k) t.set(b * d.max_pages() + k, k < d.pages_of(b) ? double(pages[next++]) : -1.0);
}

// Element offset of token j of sequence b, kv head g, in a cache of rows `width` long.
int64_t cache_at(const DecodeParams& d, const std::vector<double>& table, int64_t b, int64_t j, int64_t g, int64_t width) {
  const int64_t page = int64_t(table[size_t(b * d.max_pages() + j / d.page_size)]);
  return ((page * d.page_size + j % d.page_size) * d.kv_heads + g) * width;
}

// The cache as contiguous K and V [total_kv, h_kv, d] in the inputs' dtype, sequence after sequence.
std::vector<Tensor> gathered(const DecodeParams& d, std::span<const Tensor> in) {
  const std::vector<double> table = to_doubles(in[3]);
  const AttentionParams a = d.as_attention();
  std::vector<Tensor> out = {in[0], Tensor::host(d.dtype, {a.total_kv(), d.kv_heads, d.head_dim}),
                             Tensor::host(d.dtype, {a.total_kv(), d.kv_heads, d.head_dim_v})};
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t j = 0; j < d.lens[size_t(b)]; ++j)
      for (int64_t g = 0; g < d.kv_heads; ++g) {
        for (int64_t c = 0; c < d.head_dim; ++c)
          out[1].set(a.k_row(a.kv_start[b] + j, g) + c, in[1].get(cache_at(d, table, b, j, g, d.head_dim) + c));
        for (int64_t c = 0; c < d.head_dim_v; ++c)
          out[2].set(a.v_row(a.kv_start[b] + j, g) + c, in[2].get(cache_at(d, table, b, j, g, d.head_dim_v) + c));
      }
  return out;
}

std::vector<Problem> check_cases(const Op& op) {
  using Dims = std::map<std::string, int64_t>;
  using Opts = std::map<std::string, std::string>;
  const auto shape = [](int64_t sq, int64_t len, int64_t h, int64_t hkv, int64_t d) {
    return Dims{{"batch", 2}, {"seq_q", sq}, {"seq_kv", len}, {"heads", h}, {"kv_heads", hkv}, {"head_dim", d}};
  };
  std::vector<std::pair<Dims, Opts>> cases = {
      {shape(1, 1, 2, 2, 64), {{"page_size", "16"}}},          // a one-token context
      {shape(1, 7, 2, 2, 64), {{"page_size", "1"}}},           // a page per token
      {shape(1, 33, 8, 2, 64), {{"page_size", "16"}}},         // GQA 4, a page and a bit
      {shape(3, 127, 8, 1, 64), {{"page_size", "16"}}},        // MQA, 3 new tokens: causal among them
      {shape(1, 1000, 8, 1, 64), {{"page_size", "256"}}},      // GQA 8
      {shape(8, 1000, 8, 1, 64), {{"page_size", "16"}}},       // 64 query rows on one kv head
      {shape(2, 127, 4, 4, 128), {{"page_size", "16"}}},
      {shape(1, 300, 8, 1, 256), {{"page_size", "1"}}},
      {shape(1, 33, 4, 2, 64), {{"scale", "0.5"}, {"page_size", "16"}}},
      {shape(1, 1000, 4, 1, 64), {{"splits", "3"}, {"page_size", "16"}}},  // uneven splits
      {shape(1, 33, 4, 1, 64), {{"splits", "64"}, {"page_size", "16"}}},   // more splits than key tiles
      {{{"heads", 4}, {"kv_heads", 1}, {"head_dim", 64}, {"seq_q", 1}}, {{"seqlens_kv", "1,17,300,1000"}, {"page_size", "16"}}},
      {{{"heads", 4}, {"kv_heads", 2}, {"head_dim", 64}, {"seq_q", 4}}, {{"seqlens_kv", "7,256,257"}, {"page_size", "256"}}},
  };
  {
    Dims d = shape(1, 100, 4, 2, 192);
    d["head_dim_v"] = 128;
    cases.push_back({d, {{"page_size", "16"}}});
  }
  std::vector<Problem> out;
  for (DType t : {DType::f16, DType::bf16, DType::f32})
    for (const auto& [dims, opts] : cases) out.push_back(make_problem(op, t, dims, opts));
  return out;
}

}  // namespace

Op make_decode_op() {
  Op op;
  op.name = "decode";
  op.summary = "decode attention: 1-8 new tokens per sequence against a paged KV cache (block table, pages in any order), "
               "causal among the new tokens, GQA/MQA, variable context lengths";
  op.counting = "FlashAttention-3's count over the context: 2 * s_q * avg * (d + dv) per sequence and query head, avg = len - "
                "s_q / 2 (causal among the new tokens); bytes: the context's K and V once, Q and O once, the fp32 LSE, the "
                "block table and lengths: s_q * group query rows share each byte of K and V, so decode sits at 2 s_q group / "
                "(element bytes) FLOP/B, far below every GPU's ridge";
  op.dims = {{"batch", 4, "sequences (set by --seqlens-kv when given)", false},
             {"seq_q", 1, "new tokens per sequence (1-8)", false},
             {"seq_kv", 4096, "context length, new tokens included (the longest, with --seqlens-kv)"},
             {"heads", 32, "query heads", false},
             {"kv_heads", 8, "key/value heads (GQA: heads is a multiple; 1: MQA)", false},
             {"head_dim", 128, "d: length of a query and key vector", false},
             {"head_dim_v", 128, "dv: length of a value vector (default: head_dim)", false}};
  op.opts = {{"page_size", {}, "16", "tokens per page of the KV cache (1-256)"},
             {"seqlens_kv", {}, "", "each sequence's context length L1,L2,... (sets --batch and --seq-kv)", true},
             {"scale", {}, "", "multiplies Q K^T (default 1/sqrt(head_dim))"},
             {"splits", {}, "", "split-KV rungs: splits of each sequence's keys (default: enough blocks to fill the GPU)"}};
  op.dtypes = {DType::f32, DType::f16, DType::bf16};
  op.derive = derive;
  op.validate = validate;
  op.parse = [](const Problem& p) -> std::any { return decode_params(p); };
  op.cost = [](const Problem& p) {
    const DecodeParams d = decode_params(p);
    const AttentionParams a = d.as_attention();
    double flops = 0;
    for (int64_t b = 0; b < d.batch; ++b) flops += double(d.heads) * attention_sequence_flops(a, b);
    const double e = dtype_bits(p.dtype) / 8.0;
    const double qo = double(a.total_q() * d.heads) * double(d.head_dim + d.head_dim_v);
    const double kv = double(a.total_kv() * d.kv_heads) * double(d.head_dim + d.head_dim_v);
    return Cost{flops, (qo + kv) * e + 4.0 * double(d.heads * a.total_q() + d.batch * (d.max_pages() + 1))};
  };
  op.inputs = [](const Problem& p) {
    const DecodeParams d = decode_params(p);
    TensorSpec table{"block_table", DType::i32, {d.batch, d.max_pages()}, {}};
    table.fill = [d](Tensor& t, uint64_t seed) { fill_block_table(d, t, seed); };
    TensorSpec lens{"cache_lens", DType::i32, {d.batch}, {}};
    lens.fill = [d](Tensor& t, uint64_t) {
      for (int64_t b = 0; b < d.batch; ++b) t.set(b, double(d.lens[size_t(b)]));
    };
    return std::vector<TensorSpec>{{"Q", p.dtype, {d.batch * d.new_tokens, d.heads, d.head_dim}, {}},
                                   {"K_cache", p.dtype, {d.total_pages(), d.page_size, d.kv_heads, d.head_dim}, {}},
                                   {"V_cache", p.dtype, {d.total_pages(), d.page_size, d.kv_heads, d.head_dim_v}, {}},
                                   table,
                                   lens};
  };
  // The slots past each sequence's length in its last page hold NaN, as a real cache holds stale
  // tokens: a rung that lets one into a sum fails.
  op.derived_inputs = [](const Problem& p, std::vector<Tensor>& in) {
    const DecodeParams& d = p.as<DecodeParams>();
    const std::vector<double> table = to_doubles(in[3]);
    for (int64_t b = 0; b < d.batch; ++b)
      for (int64_t j = d.lens[size_t(b)]; j < d.pages_of(b) * d.page_size; ++j)
        for (int64_t g = 0; g < d.kv_heads; ++g) {
          for (int64_t c = 0; c < d.head_dim; ++c) in[1].set(cache_at(d, table, b, j, g, d.head_dim) + c, NAN);
          for (int64_t c = 0; c < d.head_dim_v; ++c) in[2].set(cache_at(d, table, b, j, g, d.head_dim_v) + c, NAN);
        }
  };
  op.outputs = [](const Problem& p) {
    const DecodeParams d = decode_params(p);
    return std::vector<TensorSpec>{{"O", p.dtype, {d.batch * d.new_tokens, d.heads, d.head_dim_v}, {}},
                                   {"LSE", DType::f32, {d.heads, d.batch * d.new_tokens}, {}}};
  };
  op.reference = [](const Problem& p, std::span<const Tensor> in) {
    const DecodeParams& d = p.as<DecodeParams>();
    const std::vector<Tensor> x = gathered(d, in);
    return attention_forward_f64(d.as_attention(), to_doubles(x[0]), to_doubles(x[1]), to_doubles(x[2]));
  };
  op.dtype_baseline = [](const Problem& p, std::span<const Tensor> in) {
    const DecodeParams& d = p.as<DecodeParams>();
    return attention_forward_in_dtype(d.as_attention(), gathered(d, in));
  };
  op.check_cases = check_cases;
  op.report_cases = [](const Op& self) {
    const std::map<std::string, int64_t> d = {{"batch", 8}, {"seq_q", 1}, {"seq_kv", 8192}, {"heads", 32}, {"kv_heads", 8}, {"head_dim", 128}};
    return std::vector<Problem>{make_problem(self, DType::bf16, d)};
  };
  // One sequence, one kv head of 8 query heads, 1024 tokens in 16-token pages: sectors of K and V
  // once per split, and the partial results the split-KV rung writes and merges.
  op.profile_cases = [](const Op& self) {
    return std::vector<Problem>{make_problem(
        self, DType::f16, {{"batch", 1}, {"seq_q", 1}, {"seq_kv", 1024}, {"heads", 8}, {"kv_heads", 1}, {"head_dim", 64}},
        {{"page_size", "16"}, {"splits", "4"}})};
  };
  op.tolerance = [](const Problem& p) { return default_tolerance(p.dtype); };
  op.variants = KL_CPU_ISA_VARIANTS(decode_cpu_variants);
  return op;
}

}  // namespace kl
