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
}  // namespace

void add_explain(CLI::App& app) {
  auto* sub = app.add_subcommand("explain", "the story of an op on a GPU with the numbers: bound, bytes per schedule, "
                                            "where quantization pays, algbw vs busbw");
  static AnalyticFlags f;
  static std::string results, rung, config;
  f.attach(*sub);
  sub->add_option("--results", results, "a kernelab results.json whose points of this op are placed against the bound");
  sub->add_option("--rung", rung, "gemm: model this CUDA rung (tiles, intensity per level, occupancy, stages, bound)");
  sub->add_option("--config", config, "with --rung: the config (default: the rung's first)");
  sub->callback([] {
    const model::Request req = f.request();
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
