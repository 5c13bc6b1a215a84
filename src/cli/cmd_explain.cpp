// `kernelab explain OP --gpu ID [shape] [--results FILE]`: the short exact story of an op on a GPU
// (model/explain.cpp), optionally with measured points placed against its bound.
#include <fmt/format.h>

#include <fstream>
#include <optional>

#include "cli/analytic.h"
#include "cli/common.h"
#include "kernelab/error.h"
#include "model/explain.h"
#include "model/gemm_rung.h"
#include "model/parallel.h"

namespace kl::cli {

namespace {
nlohmann::json read_results(const std::string& path) {
  std::ifstream in(path);
  if (!in) bad_input(fmt::format("--results {}: cannot open the file", path));
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    bad_input(fmt::format("--results {}: not JSON: {}", path, e.what()));
  }
}

// `explain parallel`: the communication volume of a TP x PP x DP x SP x EP layout (model/parallel.h).
CLI::App* add_explain_parallel(CLI::App& explain) {
  auto* sub = explain.add_subcommand("parallel", "communication volume of TP/PP/DP(ZeRO)/SP/EP per step per GPU, per link");
  static model::ParallelConfig c;
  static double measured = 0;
  static bool json = false;
  sub->add_option("--hidden", c.hidden, "hidden size h (default 4096)");
  sub->add_option("--layers", c.layers, "transformer layers L (default 32)");
  sub->add_option("--heads", c.heads, "attention heads (default 32; a multiple of --tp)");
  sub->add_option("--seq", c.seq, "sequence length s (default 4096)");
  sub->add_option("--micro-batch", c.micro_batch, "micro-batch size b (default 1)");
  sub->add_option("--micro-batches", c.micro_batches, "micro-batches per step (gradient accumulation, default 1)");
  sub->add_option("--vocab", c.vocab, "vocabulary size V, counted in the parameters (default 0)");
  sub->add_option("--dtype", c.dtype, "activation and gradient dtype (default bf16)");
  sub->add_option("--tp", c.tp, "tensor-parallel size");
  sub->add_option("--pp", c.pp, "pipeline-parallel size");
  sub->add_option("--dp", c.dp, "data-parallel size");
  sub->add_option("--zero", c.zero, "ZeRO stage 0-3 (default 0)");
  sub->add_flag("--sp", c.sp, "sequence parallelism over the TP group");
  sub->add_option("--experts", c.experts, "MoE experts per layer (default 0: dense)");
  sub->add_option("--top-k", c.top_k, "experts per token (default 2)");
  sub->add_option("--ep", c.ep, "expert-parallel size (divides --dp)");
  sub->add_option("--gpu", c.gpu, "GPU id from `kernelab specs` (its NVLink figure), default h100-sxm");
  sub->add_option("--gpus-per-node", c.gpus_per_node, "GPUs joined by NVLink in one node (default 8)");
  sub->add_option("--inter-node-gbs", c.inter_node_gbs, "GB/s per direction per GPU across nodes (default 50: NDR 400 Gb/s)");
  sub->add_option("--measured-busbw", measured, "GB/s: a bus bandwidth measured by `comm bench`, for a second time column");
  sub->add_flag("--json", json, "print one JSON object");
  sub->callback([] {
    if (measured != 0) c.measured_busbw_gbs = measured;
    const model::ParallelPlan p = model::explain_parallel(c);
    fmt::print("{}", json ? p.json.dump(2) + "\n" : p.text);
  });
  return sub;
}

}  // namespace

void add_explain(CLI::App& app) {
  auto* sub = app.add_subcommand("explain", "the story of an op on a GPU with the numbers: bound, bytes per schedule, "
                                            "where quantization pays, algbw vs busbw");
  static AnalyticFlags f;
  static std::string results, rung, config;
  f.attach(*sub);
  // `explain parallel` takes neither OP nor --gpu from here: both are checked in the callback.
  static CLI::App* parallel = add_explain_parallel(*sub);
  sub->get_option("op")->required(false);
  sub->get_option("--gpu")->required(false);
  sub->add_option("--results", results, "a kernelab results.json whose points of this op are placed against the bound");
  sub->add_option("--rung", rung, "gemm: model this CUDA rung (tiles, intensity per level, occupancy, stages, bound)");
  sub->add_option("--config", config, "with --rung: the config (default: the rung's first)");
  sub->callback([] {
    if (parallel->parsed()) return;
    const model::Request req = f.request();
    if (req.op.empty() || req.gpu.empty()) bad_input("explain needs an OP (or `parallel`) and --gpu");
    if (!config.empty() && rung.empty()) bad_input("--config goes with --rung");
    if (!rung.empty()) {
      if (req.op != "gemm") bad_input(fmt::format("--rung: only gemm's rungs are modelled, not {}'s", req.op));
      const model::RungExplanation r = model::explain_gemm_rung(req, rung, config);
      fmt::print("{}", f.json ? r.json.dump(2) + "\n" : r.text);
      return;
    }
    std::optional<nlohmann::json> res;
    if (!results.empty()) res = read_results(results);
    const std::string text = model::explain(req, res ? &*res : nullptr);
    if (f.json) {
      nlohmann::json j = to_json(model::analyze(req));
      j["explanation"] = text;
      fmt::print("{}\n", j.dump(2));
      return;
    }
    fmt::print("{}", text);
  });
}

}  // namespace kl::cli
