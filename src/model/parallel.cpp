#include "model/parallel.h"

#include <fmt/format.h>

#include <algorithm>

#include "hw/specs.h"
#include "kernelab/dtype.h"
#include "kernelab/error.h"

namespace kl::model {

namespace {

constexpr const char* kInterNodeSource =
    "--inter-node-gbs; default 50 GB/s per direction: one 400 Gb/s NDR InfiniBand port (ConnectX-7) per GPU, as in DGX H100";

struct Link {
  std::string name, source;
  double bw = 0;
};

// A group of `size` ranks at stride `stride` (ranks ordered TP innermost, then DP (EP inside it),
// then PP) stays inside one node when it spans at most gpus_per_node ranks.
Link link_for(const ParallelConfig& c, const GpuSpec& g, int64_t span) {
  if (span > c.gpus_per_node) return {"inter-node (InfiniBand/RoCE)", kInterNodeSource, c.inter_node_gbs * 1e9};
  if (g.nvlink_bandwidth.value > 0) return {"NVLink", g.nvlink_bandwidth.source, g.nvlink_bandwidth.value};
  return {"PCIe (no NVLink)", g.pcie_bandwidth.source, g.pcie_bandwidth.value};
}

void check(const ParallelConfig& c) {
  auto positive = [](const char* name, int64_t v) {
    if (v < 1) bad_input(fmt::format("--{} {}: must be at least 1", name, v));
  };
  positive("hidden", c.hidden), positive("layers", c.layers), positive("heads", c.heads), positive("seq", c.seq);
  positive("micro-batch", c.micro_batch), positive("micro-batches", c.micro_batches), positive("tp", c.tp);
  positive("pp", c.pp), positive("dp", c.dp), positive("ep", c.ep), positive("gpus-per-node", c.gpus_per_node);
  if (c.vocab < 0) bad_input(fmt::format("--vocab {}: must not be negative", c.vocab));
  if (c.layers % c.pp) bad_input(fmt::format("--layers {} is not a multiple of --pp {}", c.layers, c.pp));
  if (c.heads % c.tp) bad_input(fmt::format("--heads {} is not a multiple of --tp {}", c.heads, c.tp));
  if (c.zero < 0 || c.zero > 3) bad_input(fmt::format("--zero {}: a ZeRO stage from 0 to 3", c.zero));
  if (c.sp && c.tp == 1) bad_input("--sp shards the sequence over the tensor-parallel group: it needs --tp above 1");
  if (c.dp % c.ep) bad_input(fmt::format("--ep {} does not divide --dp {} (experts are spread over data-parallel ranks)", c.ep, c.dp));
  if (c.ep > 1 && c.experts == 0) bad_input("--ep needs --experts");
  if (c.experts > 0 && c.experts % c.ep) bad_input(fmt::format("--experts {} is not a multiple of --ep {}", c.experts, c.ep));
  if (c.experts > 0 && (c.top_k < 1 || c.top_k > c.experts))
    bad_input(fmt::format("--top-k {}: from 1 to --experts {}", c.top_k, c.experts));
  if (!(c.inter_node_gbs > 0)) bad_input(fmt::format("--inter-node-gbs {}: must be positive", c.inter_node_gbs));
  if (c.measured_busbw_gbs && !(*c.measured_busbw_gbs > 0))
    bad_input(fmt::format("--measured-busbw {}: must be positive", *c.measured_busbw_gbs));
}

}  // namespace

ParallelPlan explain_parallel(const ParallelConfig& c) {
  check(c);
  const GpuSpec& g = find_gpu(c.gpu);
  const std::optional<DType> t = parse_dtype(c.dtype);
  if (!t || !dtype_is_float(*t)) bad_input(fmt::format("--dtype {}: a floating-point dtype (bf16, fp16, fp32, ...)", c.dtype));
  const double e = dtype_bits(*t) / 8.0;
  const double b = double(c.micro_batch), s = double(c.seq), h = double(c.hidden);
  const double activations = b * s * h * e;  // one layer's output, bytes
  const int64_t layers_here = c.layers / c.pp, m = c.micro_batches;
  ParallelPlan plan;
  const double L = double(c.layers), E = double(c.experts), V = double(c.vocab);
  // Parameters (parallel.h): dense 12·L·h² + V·h; with experts, attention and router stay dense, the FFNs are per expert.
  const double dense_params = c.experts ? L * (4 * h * h + h * E) + V * h : 12 * L * h * h + V * h;
  const double expert_params = L * 8 * h * h * E;
  plan.params = dense_params + expert_params;

  auto add = [&](std::string par, std::string coll, std::string when, int64_t group, int64_t span, int64_t calls,
                 double bytes, double factor, std::string overlap) {
    if (group < 2 || calls == 0) return;
    const Link l = link_for(c, g, span);
    CollectiveLine x{std::move(par), std::move(coll), std::move(when), group, calls, bytes, double(calls) * bytes * factor,
                     l.name, l.source, l.bw, 0, 0, std::move(overlap)};
    x.time_s = x.link_bytes / x.link_bw;
    if (c.measured_busbw_gbs) x.measured_time_s = x.link_bytes / (*c.measured_busbw_gbs * 1e9);
    plan.lines.push_back(std::move(x));
  };
  const double tp_ar = 2.0 * double(c.tp - 1) / double(c.tp), tp_one = double(c.tp - 1) / double(c.tp);
  const std::string tp_overlap = "none: on the critical path between the layer's GEMMs";
  if (c.sp) {
    for (const char* dir : {"forward", "backward"}) {
      add("TP+SP", "all-gather", fmt::format("{}, 2 per layer", dir), c.tp, c.tp, 2 * layers_here * m, activations, tp_one, tp_overlap);
      add("TP+SP", "reduce-scatter", fmt::format("{}, 2 per layer", dir), c.tp, c.tp, 2 * layers_here * m, activations, tp_one, tp_overlap);
    }
  } else {
    add("TP", "all-reduce", "forward, 2 per layer", c.tp, c.tp, 2 * layers_here * m, activations, tp_ar, tp_overlap);
    add("TP", "all-reduce", "backward, 2 per layer", c.tp, c.tp, 2 * layers_here * m, activations, tp_ar, tp_overlap);
  }
  const double pp_bytes = c.sp ? activations / double(c.tp) : activations;  // SP: each TP rank holds s/t of the sequence
  add("PP", "send/recv", "forward activations, per micro-batch", c.pp, c.tp * c.dp * c.pp, m, pp_bytes, 1,
      "other micro-batches' compute (1F1B), except the pipeline bubble");
  add("PP", "send/recv", "backward gradients, per micro-batch", c.pp, c.tp * c.dp * c.pp, m, pp_bytes, 1,
      "other micro-batches' compute (1F1B), except the pipeline bubble");
  const std::string dp_overlap = "the backward pass (bucketed, as the gradients are produced), except the last bucket";
  // The gradient reduction of a parameter shard of `shard` bytes over `group` ranks, by ZeRO stage.
  auto add_dp = [&](const std::string& par, int64_t group, double shard, const std::string& what) {
    const double one = double(group - 1) / double(group);
    if (c.zero == 0) {
      add(par, "all-reduce", what + "gradients, once per step", group, c.tp * c.dp, 1, shard, 2 * one, dp_overlap);
    } else if (c.zero < 3) {
      add(fmt::format("{} ZeRO-{}", par, c.zero), "reduce-scatter", what + "gradients, once per step", group, c.tp * c.dp, 1, shard,
          one, dp_overlap);
      add(fmt::format("{} ZeRO-{}", par, c.zero), "all-gather", "updated " + what + "parameters, once per step", group, c.tp * c.dp,
          1, shard, one, "the next step's forward, layer by layer");
    } else {
      add(par + " ZeRO-3", "all-gather", what + "parameters before each layer's forward", group, c.tp * c.dp, 1, shard, one,
          "the previous layer's forward (prefetch)");
      add(par + " ZeRO-3", "all-gather", what + "parameters again for the backward", group, c.tp * c.dp, 1, shard, one,
          "the next layer's backward (prefetch)");
      add(par + " ZeRO-3", "reduce-scatter", what + "gradients, once per step", group, c.tp * c.dp, 1, shard, one, dp_overlap);
    }
  };
  add_dp("DP", c.dp, dense_params / double(c.tp * c.pp) * e, "");  // this GPU's shard of the dense parameters, bytes
  // This GPU's experts (E/ep per layer), reduced over the dp/ep ranks that hold the same ones.
  if (c.experts > 0) add_dp("EDP", c.dp / c.ep, expert_params / double(c.ep) / double(c.tp * c.pp) * e, "expert ");
  if (c.experts > 0) {
    const double tokens_out = activations * double(c.top_k) / (c.sp ? double(c.tp) : 1.0);
    const double ep_one = double(c.ep - 1) / double(c.ep);
    for (const char* what : {"forward dispatch", "forward combine", "backward dispatch", "backward combine"})
      add("EP", "all-to-all", fmt::format("{}, per MoE layer", what), c.ep, c.tp * c.ep, layers_here * m, tokens_out, ep_one,
          "little: the experts wait for their tokens (shared experts or micro-batch interleaving can hide part)");
  }

  std::string text = fmt::format(
      "explain parallel: {} layers, hidden {}, seq {}, micro-batch {} x {}, {} ({} B); TP {} x PP {} x DP {} (ZeRO-{}){}{} on "
      "{} ({} GPUs per node)\n",
      c.layers, c.hidden, c.seq, c.micro_batch, c.micro_batches, c.dtype, e, c.tp, c.pp, c.dp, c.zero, c.sp ? ", SP" : "",
      c.experts ? fmt::format(", EP {} ({} experts, top-{})", c.ep, c.experts, c.top_k) : "", g.id, c.gpus_per_node);
  text += fmt::format("parameters {}{} = {:.3g}; one layer's activations b·s·h·e = {:.4g} MB\n",
                      c.experts ? "L·(4h² + h·E + 8h²·E)" : "12·L·h²", c.vocab ? " + V·h" : "", plan.params, activations / 1e6);
  text += fmt::format("{:<11} {:<14} {:<42} {:>5} {:>6} {:>12} {:>14} {:>10} {}\n", "parallelism", "collective", "when", "group",
                      "calls", "MB per call", "MB on link/GPU", "time ms", "link");
  nlohmann::json lines = nlohmann::json::array();
  for (const CollectiveLine& x : plan.lines) {
    plan.link_bytes += x.link_bytes, plan.time_s += x.time_s;
    text += fmt::format("{:<11} {:<14} {:<42} {:>5} {:>6} {:>12.4g} {:>14.5g} {:>10.4g} {} {:.0f} GB/s\n", x.parallelism,
                        x.collective, x.when, x.group, x.calls, x.bytes_per_call / 1e6, x.link_bytes / 1e6, x.time_s * 1e3,
                        x.link, x.link_bw / 1e9);
    lines.push_back({{"parallelism", x.parallelism}, {"collective", x.collective}, {"when", x.when}, {"group", x.group},
                     {"calls", x.calls}, {"bytes_per_call", x.bytes_per_call}, {"link_bytes", x.link_bytes},
                     {"link", x.link}, {"link_source", x.link_source}, {"link_bytes_per_s", x.link_bw}, {"time_s", x.time_s},
                     {"measured_time_s", c.measured_busbw_gbs ? nlohmann::json(x.measured_time_s) : nlohmann::json()},
                     {"overlap", x.overlap}});
  }
  text += fmt::format("total per GPU per step: {:.5g} MB on links, {:.4g} ms at link bandwidth (modelled; the sum, before overlap)\n",
                      plan.link_bytes / 1e6, plan.time_s * 1e3);
  if (c.measured_busbw_gbs)
    text += fmt::format("at the measured bus bandwidth {:g} GB/s: {:.4g} ms\n", *c.measured_busbw_gbs,
                        plan.link_bytes / (*c.measured_busbw_gbs * 1e9) * 1e3);
  text += "overlap:\n";
  for (const CollectiveLine& x : plan.lines) text += fmt::format("  {} {} ({}): {}\n", x.parallelism, x.collective, x.when, x.overlap);
  text += "links:\n";
  std::vector<std::string> seen;
  for (const CollectiveLine& x : plan.lines)
    if (std::find(seen.begin(), seen.end(), x.link) == seen.end()) {
      seen.push_back(x.link);
      text += fmt::format("  {}: {:.0f} GB/s per direction ({})\n", x.link, x.link_bw / 1e9, x.link_source);
    }
  plan.text = text;
  plan.json = {{"gpu", g.id}, {"dtype", c.dtype}, {"params", plan.params}, {"expert_params", expert_params}, {"activation_bytes", activations},
               {"lines", lines}, {"link_bytes", plan.link_bytes}, {"time_s", plan.time_s}, {"modelled", true}};
  return plan;
}

}  // namespace kl::model
