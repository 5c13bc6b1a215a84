#include "model/analysis.h"

#include <fmt/format.h>

#include <algorithm>

#include "kernelab/error.h"
#include "model/explain.h"

namespace kl::model {

namespace {

std::string flag(const std::string& name) {
  std::string f = "--" + name;
  std::replace(f.begin(), f.end(), '_', '-');
  return f;
}

// The analysis of a cost against a peak (the format's, on g) and the given bandwidth.
Analysis finish(const Request& req, const Format& f, const GpuSpec& g, const Cost& c, const Figure& bandwidth,
                std::string bandwidth_kind, std::string shape, std::string_view counting) {
  Analysis a;
  a.op = req.op;
  a.gpu = g.id;
  a.gpu_name = g.name;
  a.dtype = f.name;
  a.shape = std::move(shape);
  a.counting = counting;
  a.measured = req.measured;
  a.peak = gpu_peak(g, f.peak_key, req.measured);
  a.bandwidth = bandwidth;
  a.bandwidth_kind = std::move(bandwidth_kind);
  a.roof = roofline(c, a.peak.value, a.bandwidth.value);
  return a;
}

// A shape option of the request's op: the value given, else the op's default.
int64_t option(const Request& req, const std::string& name) {
  const AnalyticOp& op = find_analytic_op(req.op);
  auto d = std::find_if(op.dims.begin(), op.dims.end(), [&](const DimSpec& s) { return s.name == name; });
  return req.dim(name, d->default_value);
}

// A registry op: its own cost model, on a problem that is costed, not run here (so no shape is
// refused for not fitting in this machine's memory).
Analysis registry_analysis(const Request& req, const Format& f, const GpuSpec& g) {
  const Op& op = find_op(req.op);
  std::map<std::string, int64_t> dims;
  for (const DimSpec& d : op.dims) dims[d.name] = req.dim(d.name, d.default_value);
  Problem p = make_problem(op, f.storage, dims, {}, Use::cost_only);
  return finish(req, f, g, op.cost(p), gpu_bandwidth(g, req.measured), "memory", p.shape_str(), op.counting);
}

// gemm: the registry's for float activations and weights; weight-only quantized with
// --weight-bits; W8A8 for the 8-bit dtypes.
Analysis gemm_analysis(const Request& req, const Format& f, const GpuSpec& g) {
  const bool weight_only = req.dims.count("weight_bits") > 0;
  const bool w8a8 = f.bytes == 1;
  if (!weight_only && req.dims.count("group_size"))
    bad_input(fmt::format("--group-size={} needs --weight-bits (4 or 8)", req.dims.at("group_size")));
  if (weight_only && w8a8)
    bad_input(fmt::format("--weight-bits with --dtype {}: weight-only quantization keeps 16/32-bit activations; an "
                          "8-bit dtype is already the W8A8 form", f.name));
  if (!weight_only && !w8a8) return registry_analysis(req, f, g);
  const GemmShape s = gemm_shape(req);
  const std::string shape = fmt::format("m={},n={},k={}", s.m, s.n, s.k);
  const Figure bw = gpu_bandwidth(g, req.measured);
  if (w8a8) {
    Analysis a = finish(req, f, g, gemm_w8a8_cost(s), bw, "memory", shape, kCountingGemmW8A8);
    a.extra["form"] = "w8a8";
    return a;
  }
  const int bits = static_cast<int>(option(req, "weight_bits"));
  const int64_t group = option(req, "group_size");
  Analysis a = finish(req, f, g, gemm_weight_only_cost(s, f.bytes, bits, group), bw, "memory",
                      fmt::format("{},weight_bits={},group_size={}", shape, bits, group), kCountingGemmWeightOnly);
  a.extra["form"] = "weight_only";
  a.extra["weight_bits"] = bits;
  a.extra["group_size"] = group;
  return a;
}

Analysis attention_analysis(const Request& req, const Format& f, const GpuSpec& g) {
  const AttentionShape s = attention_shape(req);
  const bool backward = req.has("backward");
  const Schedule schedule = req.has("naive") ? Schedule::naive : Schedule::flash;
  const std::string shape = fmt::format("batch={},heads={},kv_heads={},seq_q={},seq_kv={},head_dim={}{}", s.batch, s.heads,
                                        s.kv_heads, s.seq_q, s.seq_kv, s.head_dim, s.causal ? ",causal" : "");
  Analysis a = finish(req, f, g, attention_cost(s, f.bytes, backward, schedule), gpu_bandwidth(g, req.measured), "memory",
                      shape, kCountingAttention);
  a.extra["schedule"] = schedule == Schedule::flash ? "flash" : "naive";
  a.extra["pass"] = backward ? "backward" : "forward";
  return a;
}

// Collectives: bytes on the busiest link over the link bandwidth per direction (NVLink where
// the part has it, else PCIe); "bound" is "memory", meaning link-bound.
Analysis collective_analysis(const Request& req, const Format& f, const GpuSpec& g) {
  const Collective c = *parse_collective(req.op);
  const bool nvlink = g.nvlink_bandwidth.value > 0;
  const Figure& link = nvlink ? g.nvlink_bandwidth : g.pcie_bandwidth;
  const int64_t bytes = option(req, "bytes"), ranks = option(req, "ranks");
  const CollectiveBound b = collective_bound(c, static_cast<double>(bytes), ranks, link.value);
  Analysis a = finish(req, f, g, Cost{0, b.link_bytes}, link, nvlink ? "nvlink" : "pcie",
                      fmt::format("bytes={},ranks={}", bytes, ranks), kCountingCollective);
  a.extra["message_bytes"] = bytes;
  a.extra["bus_factor"] = bus_factor(c, ranks);
  a.extra["algbw"] = b.algbw;
  a.extra["busbw"] = b.busbw;
  return a;
}

std::vector<AnalyticOp> make_table() {
  std::vector<AnalyticOp> ops;
  for (const Op& r : registry()) {
    if (r.name == "attention") continue;  // the entry below models it: both schedules, forward and backward, decode
    AnalyticOp op{r.name, r.summary, r.dims, {}, registry_analysis, roof_story};
    if (r.name == "gemm") {
      op.dims.push_back({"weight_bits", 0, "4 or 8: weight-only quantized weights (default: not quantized)"});
      op.dims.push_back({"group_size", 128, "weights per fp16 scale along k (with --weight-bits)"});
      op.analyze = gemm_analysis;
      op.story = gemm_story;
    }
    if (r.name == "decode") op.story = decode_story;
    ops.push_back(std::move(op));
  }
  ops.push_back({"attention",
                 "softmax(Q K^T / sqrt(D)) V per head, GQA (kv-heads divides heads); forward or backward; flash or naive "
                 "schedule",
                 {{"batch", 1, "batch size"},
                  {"heads", 32, "query heads"},
                  {"kv_heads", 0, "key/value heads (default: --heads)"},
                  {"seq_q", 4096, "query length (1 for decode)"},
                  {"seq_kv", 0, "key/value length, the KV cache in decode (default: --seq-q)"},
                  {"head_dim", 128, "head dimension"}},
                 {{"causal", "causal mask, bottom-right aligned (FLOPs as FlashAttention-3 counts them: half at Sq = Sk)"},
                  {"backward", "the backward pass"},
                  {"naive", "the naive schedule: S and P written to HBM and read back"}},
                 attention_analysis,
                 attention_story});
  const std::pair<const char*, const char*> collectives[] = {
      {"allreduce", "every rank ends with the sum of all ranks' buffers"},
      {"allgather", "every rank ends with the concatenation of all ranks' pieces"},
      {"reducescatter", "every rank ends with its piece of the sum of all ranks' buffers"},
      {"alltoall", "every rank sends a distinct piece of its buffer to every other rank"}};
  for (const auto& [name, summary] : collectives)
    ops.push_back({name,
                   summary,
                   {{"bytes", int64_t{1} << 30, "per-rank buffer as nccl-tests reports it (allgather: the output)"},
                    {"ranks", 8, "number of GPUs"}},
                   {},
                   collective_analysis,
                   collective_story});
  return ops;
}

}  // namespace

int64_t Request::dim(const std::string& name, int64_t fallback) const {
  auto it = dims.find(name);
  return it == dims.end() ? fallback : it->second;
}

const std::vector<AnalyticOp>& analytic_ops() {
  static const std::vector<AnalyticOp> ops = make_table();
  return ops;
}

const AnalyticOp& find_analytic_op(std::string_view name) {
  std::string known;
  for (const AnalyticOp& op : analytic_ops()) {
    if (op.name == name) return op;
    known += (known.empty() ? "" : ", ") + op.name;
  }
  bad_input(fmt::format("unknown op '{}' (known: {})", name, known));
}

Analysis analyze(const Request& req) {
  const AnalyticOp& op = find_analytic_op(req.op);
  for (const auto& [name, value] : req.dims) {
    if (std::none_of(op.dims.begin(), op.dims.end(), [&](const DimSpec& d) { return d.name == name; }))
      bad_input(fmt::format("op {} has no option {}", op.name, flag(name)));
    if (value <= 0 || value > (int64_t{1} << 40))
      bad_input(fmt::format("{}={}: must be positive and at most 2^40", flag(name), value));
  }
  for (const std::string& name : req.switches)
    if (std::none_of(op.switches.begin(), op.switches.end(), [&](const SwitchSpec& w) { return w.name == name; }))
      bad_input(fmt::format("op {} has no option {}", op.name, flag(name)));
  const Format& f = parse_format(req.dtype);
  return op.analyze(req, f, find_gpu(req.gpu));
}

GemmShape gemm_shape(const Request& req) { return {option(req, "m"), option(req, "n"), option(req, "k")}; }

AttentionShape attention_shape(const Request& req) {
  AttentionShape s;
  s.batch = option(req, "batch");
  s.heads = option(req, "heads");
  s.kv_heads = req.dim("kv_heads", s.heads);
  s.seq_q = option(req, "seq_q");
  s.seq_kv = req.dim("seq_kv", s.seq_q);
  s.head_dim = option(req, "head_dim");
  s.causal = req.has("causal");
  validate(s);
  return s;
}

Roofline reroof(const Analysis& a, const Cost& c) { return roofline(c, a.peak.value, a.bandwidth.value); }

}  // namespace kl::model
