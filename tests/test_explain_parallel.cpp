// The communication-volume model against the published per-layer formulas (model/parallel.h) and
// the README's worked examples through the CLI.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bad_input.h"
#include "cli_util.h"
#include "model/parallel.h"

namespace kl::test {

namespace {

const nlohmann::json& line(const model::ParallelPlan& p, const std::string& par, const std::string& coll, const std::string& when) {
  for (const nlohmann::json& l : p.json["lines"])
    if (l["parallelism"] == par && l["collective"] == coll && l["when"].get<std::string>().rfind(when, 0) == 0) return l;
  static const nlohmann::json none;
  ADD_FAILURE() << "no line " << par << " " << coll << " " << when << "\n" << p.text;
  return none;
}

}  // namespace

TEST(ExplainParallel, TensorParallelIsTwoAllReducesOfBshPerLayerForward) {
  model::ParallelConfig c;
  c.hidden = 4096, c.layers = 32, c.seq = 4096, c.micro_batch = 2, c.tp = 8;
  const model::ParallelPlan p = model::explain_parallel(c);
  const double bsh_bytes = 2.0 * 4096 * 4096 * 2;  // b·s·h, bf16
  const nlohmann::json& fwd = line(p, "TP", "all-reduce", "forward");
  EXPECT_EQ(fwd["calls"], 2 * 32);
  EXPECT_DOUBLE_EQ(fwd["bytes_per_call"].get<double>(), bsh_bytes);
  EXPECT_DOUBLE_EQ(fwd["link_bytes"].get<double>(), 64 * bsh_bytes * 2 * 7 / 8.0);  // ring: 2(t-1)/t of each
  EXPECT_EQ(fwd["link"], "NVLink");
  EXPECT_DOUBLE_EQ(fwd["link_bytes_per_s"].get<double>(), 450e9);  // h100-sxm in the database
  EXPECT_NE(fwd["link_source"].get<std::string>().find("halved"), std::string::npos);
  EXPECT_DOUBLE_EQ(fwd["time_s"].get<double>(), fwd["link_bytes"].get<double>() / 450e9);
  EXPECT_EQ(line(p, "TP", "all-reduce", "backward")["calls"], 64);
  EXPECT_EQ(p.json["lines"].size(), 2u);  // no PP, DP or EP traffic
}

TEST(ExplainParallel, SequenceParallelMovesTheSameBytesAsReduceScatterPlusAllGather) {
  model::ParallelConfig c;
  c.tp = 4;
  const double plain = model::explain_parallel(c).link_bytes;
  c.sp = true;
  const model::ParallelPlan sp = model::explain_parallel(c);
  EXPECT_DOUBLE_EQ(sp.link_bytes, plain);
  EXPECT_EQ(line(sp, "TP+SP", "all-gather", "forward")["calls"], 64);
}

TEST(ExplainParallel, DataParallelVolumeFollowsTheZeroStage) {
  model::ParallelConfig c;
  c.hidden = 1024, c.layers = 4, c.dp = 4, c.gpus_per_node = 8;
  const double grads = 12.0 * 4 * 1024 * 1024 * 2;  // 12·L·h² parameters, bf16 gradients
  c.zero = 0;
  const model::ParallelPlan z0 = model::explain_parallel(c);
  EXPECT_DOUBLE_EQ(line(z0, "DP", "all-reduce", "gradients")["link_bytes"].get<double>(), grads * 2 * 3 / 4.0);
  c.zero = 2;
  EXPECT_DOUBLE_EQ(model::explain_parallel(c).link_bytes, z0.link_bytes);  // reduce-scatter + all-gather
  c.zero = 3;
  EXPECT_DOUBLE_EQ(model::explain_parallel(c).link_bytes, 1.5 * z0.link_bytes);
  c.zero = 0, c.tp = 8;  // TP 8 x DP 4 spans 32 GPUs: the DP all-reduce crosses nodes
  const model::ParallelPlan cross = model::explain_parallel(c);
  EXPECT_EQ(line(cross, "DP", "all-reduce", "gradients")["link"], "inter-node (InfiniBand/RoCE)");
  EXPECT_EQ(line(cross, "TP", "all-reduce", "forward")["link"], "NVLink");
}

TEST(ExplainParallel, ExpertParallelIsFourAllToAllsOfTopKTokensPerMoeLayer) {
  model::ParallelConfig c;
  c.hidden = 2048, c.layers = 8, c.seq = 1024, c.dp = 8, c.ep = 8, c.experts = 64, c.top_k = 2;
  const model::ParallelPlan p = model::explain_parallel(c);
  const nlohmann::json& d = line(p, "EP", "all-to-all", "forward dispatch");
  EXPECT_EQ(d["calls"], 8);
  EXPECT_DOUBLE_EQ(d["bytes_per_call"].get<double>(), 1.0 * 1024 * 2048 * 2 * 2);
  EXPECT_DOUBLE_EQ(d["link_bytes"].get<double>(), 8 * d["bytes_per_call"].get<double>() * 7 / 8.0);
}

// Hand computation, h = 1024, L = 4, E = 8 experts, EP 4 inside DP 8, bf16: a layer holds attention 4h² =
// 4,194,304, a router h·E = 8,192 and 8 experts of 8h² = 8,388,608 each. Dense: 4 x 4,202,496 =
// 16,809,984 parameters, all-reduced over 8 ranks: 16,809,984 x 2 B x 2·7/8 = 58,834,944 B on the link.
// Experts: 4 x 8 x 8,388,608 = 268,435,456; this GPU holds 8/4 = 2 per layer, 67,108,864 parameters,
// 134,217,728 B of gradients, reduced over the 8/4 = 2 ranks holding the same experts: x 2·1/2.
TEST(ExplainParallel, ExpertWeightsCountAndReduceOverDpOverEpRanks) {
  model::ParallelConfig c;
  c.hidden = 1024, c.layers = 4, c.seq = 512, c.dp = 8, c.ep = 4, c.experts = 8, c.top_k = 2;
  const model::ParallelPlan p = model::explain_parallel(c);
  EXPECT_DOUBLE_EQ(p.params, 16809984.0 + 268435456.0);
  EXPECT_DOUBLE_EQ(p.json["expert_params"].get<double>(), 268435456.0);
  const nlohmann::json& dense = line(p, "DP", "all-reduce", "gradients");
  EXPECT_EQ(dense["group"], 8);
  EXPECT_DOUBLE_EQ(dense["bytes_per_call"].get<double>(), 16809984.0 * 2);
  EXPECT_DOUBLE_EQ(dense["link_bytes"].get<double>(), 58834944.0);
  const nlohmann::json& experts = line(p, "EDP", "all-reduce", "expert gradients");
  EXPECT_EQ(experts["group"], 2);
  EXPECT_DOUBLE_EQ(experts["bytes_per_call"].get<double>(), 134217728.0);
  EXPECT_DOUBLE_EQ(experts["link_bytes"].get<double>(), 134217728.0);
  c.ep = 8;  // every rank holds its own experts: nothing to reduce them with
  for (const nlohmann::json& l : model::explain_parallel(c).json["lines"]) EXPECT_NE(l["parallelism"], "EDP") << l.dump();
  c.ep = 4, c.zero = 3;  // ZeRO-3: the same 1.5x on the expert shard
  const model::ParallelPlan z3 = model::explain_parallel(c);
  EXPECT_DOUBLE_EQ(line(z3, "EDP ZeRO-3", "reduce-scatter", "expert gradients")["link_bytes"].get<double>(), 134217728.0 / 2);
}

TEST(ExplainParallel, RefusesInconsistentLayouts) {
  model::ParallelConfig c;
  c.layers = 30, c.pp = 4;
  EXPECT_NE(bad_input_message([&] { model::explain_parallel(c); }).find("--layers 30 is not a multiple of --pp 4"), std::string::npos);
  c = {};
  c.sp = true;
  EXPECT_NE(bad_input_message([&] { model::explain_parallel(c); }).find("--sp"), std::string::npos);
  c = {};
  c.dp = 4, c.ep = 3, c.experts = 6;
  EXPECT_NE(bad_input_message([&] { model::explain_parallel(c); }).find("--ep 3 does not divide --dp 4"), std::string::npos);
  c = {};
  c.zero = 4;
  EXPECT_NE(bad_input_message([&] { model::explain_parallel(c); }).find("--zero 4"), std::string::npos);
  c = {};
  c.gpu = "no-such-gpu";
  EXPECT_FALSE(bad_input_message([&] { model::explain_parallel(c); }).empty());
}

// The README's worked example: every line the README prints under its command is in the output.
TEST(ExplainParallel, ReadmeWorkedExampleTensorParallel) {
  const std::string command = "explain parallel --hidden 4096 --layers 32 --seq 4096 --micro-batch 1 --tp 8 --gpu h100-sxm";
  std::ifstream readme(KERNELAB_SOURCE_DIR "/README.md");
  std::vector<std::string> printed;
  bool in_example = false;
  for (std::string l; std::getline(readme, l);) {
    if (in_example && l == "```") break;
    if (in_example) printed.push_back(l);
    if (l == "$ build/kernelab " + command) in_example = true;
  }
  ASSERT_GE(printed.size(), 4u) << "README lost the worked example of `" << command << "`";
  const CliResult r = run_kernelab(command);
  ASSERT_EQ(r.code, 0) << r.err;
  for (const std::string& l : printed) EXPECT_NE(r.out.find(l), std::string::npos) << "README line not printed: " << l << "\n" << r.out;
}

TEST(ExplainParallel, ReadmeWorkedExampleZeroAcrossNodes) {
  const CliResult r = run_kernelab("explain parallel --hidden 4096 --layers 32 --seq 4096 --tp 8 --dp 4 --zero 3 --gpu h100-sxm --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_DOUBLE_EQ(j["params"].get<double>(), 12.0 * 32 * 4096 * 4096);
  const nlohmann::json& rs = j["lines"][4];
  EXPECT_EQ(rs["collective"], "reduce-scatter");
  EXPECT_NEAR(rs["link_bytes"].get<double>(), 12.0 * 32 * 4096 * 4096 / 8 * 2 * 3 / 4, 1);
  EXPECT_EQ(rs["link"], "inter-node (InfiniBand/RoCE)");
  EXPECT_NEAR(rs["time_s"].get<double>(), rs["link_bytes"].get<double>() / 50e9, 1e-12);
}

TEST(ExplainParallel, BadFlagsExitTwo) {
  const CliResult r = run_kernelab("explain parallel --tp 3 --heads 32");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--heads 32 is not a multiple of --tp 3"), std::string::npos) << r.err;
  EXPECT_EQ(run_kernelab("explain --gpu h100-sxm").code, 2);
}

}  // namespace kl::test
