// `trace analyze` over several ranks' traces (trace/ranks.h) on small traces written here, figures
// worked by hand; and on the two sampled_training ranks of one 128-rank NCCL job.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "bad_input.h"
#include "cli_util.h"
#include "trace/ranks.h"

namespace kl::test {

namespace fs = std::filesystem;

namespace {

nlohmann::json x(const std::string& cat, const std::string& name, double ts, double dur, nlohmann::json args = nlohmann::json::object()) {
  return {{"ph", "X"}, {"cat", cat}, {"name", name}, {"pid", 0}, {"tid", 1}, {"ts", ts}, {"dur", dur}, {"args", args}};
}

fs::path write_trace(const fs::path& dir, const std::string& file, const nlohmann::json& events, int rank = -1) {
  fs::create_directories(dir);
  nlohmann::json t = {{"traceEvents", events}};
  if (rank >= 0) t["distributedInfo"] = {{"rank", rank}, {"world_size", 3}};
  std::ofstream(dir / file) << t.dump();
  return dir / file;
}

// Three host ranks, collectives numbered: seq 1 starts at 100, 110, 120 us; seq 2 at 300, 300 and
// 800 (rank 2 late); seq 3 at 1000 on all. Rank 0 computes over [50, 150) and [850, 1050).
fs::path host_job() {
  const fs::path dir = scratch_dir() / "ranks-host";
  for (int r = 0; r < 3; ++r) {
    nlohmann::json ev = nlohmann::json::array();
    ev.push_back(x("user_annotation", "kernelab:allreduce", 100 + 10 * r, 100 - 10 * r, {{"seq", 1}}));
    ev.push_back(x("user_annotation", "kernelab:allreduce", r == 2 ? 800 : 300, r == 2 ? 100 : 600, {{"seq", 2}}));
    ev.push_back(x("user_annotation", "kernelab:allreduce", 1000, 100, {{"seq", 3}}));
    if (r == 0) ev.push_back(x("cpu_op", "compute", 50, 100)), ev.push_back(x("cpu_op", "compute", 850, 200));
    write_trace(dir, "rank-" + std::to_string(r) + ".json", ev, r);
  }
  return dir;
}

}  // namespace

TEST(TraceRanks, HostRanksByHand) {
  std::vector<trace::RankTrace> t;
  for (const std::string& f : trace::rank_trace_files({host_job().string()})) t.push_back(trace::load_rank_trace(f));
  const trace::RanksReport r = trace::analyze_ranks(t);
  ASSERT_EQ(r.ranks.size(), 3u);
  EXPECT_EQ(r.matched_by, "seq");
  const trace::RankSummary& r0 = r.ranks[0];
  EXPECT_FALSE(r0.gpu);
  // Union of communication: [100,200) + [300,900) + [1000,1100) = 800 us; under compute: 50 + 50 + 50.
  EXPECT_EQ(r0.comm_time, 800'000);
  EXPECT_EQ(r0.compute_time, 300'000);
  EXPECT_EQ(r0.overlapped, 150'000);
  EXPECT_EQ(r0.exposed, 650'000);
  EXPECT_EQ(r.ranks[2].exposed, r.ranks[2].comm_time);  // no compute traced on rank 2
  ASSERT_EQ(r.collectives.size(), 3u);
  EXPECT_EQ(r.collectives[0].slowest, 2u);
  EXPECT_EQ(r.collectives[0].lag, 20'000);
  EXPECT_EQ(r.collectives[1].slowest, 2u);
  EXPECT_EQ(r.collectives[1].lag, 500'000);
  EXPECT_EQ(r.collectives[2].lag, 0);
  EXPECT_EQ(r.ranks[2].times_last, 2u);  // a tie (seq 3) makes no rank last
  EXPECT_EQ(r.ranks[2].lag_caused, 520'000);
  EXPECT_EQ(r.ranks[0].wait, 520'000);  // 20 + 500
  EXPECT_EQ(r.ranks[1].wait, 510'000);  // 10 + 500
  EXPECT_EQ(r.ranks[2].wait, 0);
  const std::string text = trace::ranks_text(r, 10);
  EXPECT_NE(text.find("slowest rank: 2 (last to arrive in 2 of 3 collectives, 520 us of lag in all)"), std::string::npos) << text;
}

// Two GPU ranks, one NCCL kernel name; rank 1's trace lacks the second collective (sampled): it is
// left unmatched because rank 1's next one starts after rank 0's ends.
TEST(TraceRanks, GpuRanksMatchInOrderOnlyWhenTheyOverlap) {
  const fs::path dir = scratch_dir() / "ranks-gpu";
  const std::string nccl = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)";
  write_trace(dir, "a.json", nlohmann::json::array({x("kernel", nccl, 0, 100), x("kernel", nccl, 200, 100), x("kernel", nccl, 400, 100),
                              x("kernel", "ampere_sgemm_128x64_tn", 250, 200), x("cpu_op", "aten::mm", 0, 1000)}), 0);
  write_trace(dir, "b.json", nlohmann::json::array({x("kernel", nccl, 50, 50), x("kernel", nccl, 420, 80)}), 1);
  const trace::RanksReport r = trace::analyze_ranks({trace::load_rank_trace((dir / "a.json").string()),
                                                     trace::load_rank_trace((dir / "b.json").string())});
  EXPECT_EQ(r.matched_by, "order");
  ASSERT_EQ(r.collectives.size(), 2u);
  EXPECT_EQ(r.collectives[0].slowest, 1u);
  EXPECT_EQ(r.collectives[0].lag, 50'000);
  EXPECT_EQ(r.collectives[1].lag, 20'000);
  EXPECT_TRUE(r.ranks[0].gpu);
  EXPECT_EQ(r.ranks[0].events, 3u);
  EXPECT_EQ(r.ranks[0].matched, 2u);
  EXPECT_EQ(r.ranks[0].comm_time, 300'000);
  EXPECT_EQ(r.ranks[0].overlapped, 100'000);  // the GEMM covers [250,300) and [400,450); aten::mm is host-side
  EXPECT_EQ(r.ranks[0].exposed, 200'000);
}

TEST(TraceRanks, RefusesTwoTracesOfOneRankAndEmptyFolders) {
  const fs::path dir = scratch_dir() / "ranks-dup";
  write_trace(dir, "a.json", nlohmann::json::array({x("kernel", "ncclKernel_x", 0, 1)}), 0);
  write_trace(dir, "b.json", nlohmann::json::array({x("kernel", "ncclKernel_x", 0, 1)}), 0);
  EXPECT_NE(bad_input_message([&] {
              trace::analyze_ranks({trace::load_rank_trace((dir / "a.json").string()), trace::load_rank_trace((dir / "b.json").string())});
            }).find("two traces are rank 0"),
            std::string::npos);
  fs::create_directories(scratch_dir() / "ranks-empty");
  const CliResult e = run_kernelab("trace analyze '" + (scratch_dir() / "ranks-empty").string() + "'");
  EXPECT_EQ(e.code, 2);
  EXPECT_NE(e.err.find("no .json or .json.gz trace"), std::string::npos) << e.err;
  const CliResult s = run_kernelab("trace analyze --steps complete '" + host_job().string() + "'");
  EXPECT_EQ(s.code, 2);
  EXPECT_NE(s.err.find("--steps complete: applies to one trace"), std::string::npos) << s.err;
}

TEST(TraceRanks, CliJsonKeys) {
  const CliResult r = run_kernelab("trace analyze --json '" + host_job().string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["matched_by"], "seq");
  EXPECT_EQ(j["slowest_rank"]["rank"], 2);
  EXPECT_DOUBLE_EQ(j["slowest_rank"]["lag_caused_us"].get<double>(), 520);
  ASSERT_EQ(j["ranks"].size(), 3u);
  EXPECT_DOUBLE_EQ(j["ranks"][0]["comm_us"].get<double>(), 800);
  EXPECT_DOUBLE_EQ(j["ranks"][0]["exposed_comm_us"].get<double>(), 650);
  EXPECT_EQ(j["ranks"][0]["comm_from"], "host_events");
  EXPECT_EQ(j["collectives"][1]["seq"], 2);
  EXPECT_EQ(j["collectives"][1]["slowest_rank"], 2);
  EXPECT_DOUBLE_EQ(j["collectives"][1]["lag_us"].get<double>(), 500);
}

// Ranks 0 and 1 of one 128-rank job (HTA's test data): each trace samples its events, so only the
// NCCL kernels that overlap across the two are matched. Figures worked out from the traces'
// kernel intervals (ts, dur in us): the 5 that overlap, rank 1 last in each.
TEST(TraceRanks, SampledTrainingRanksZeroAndOne) {
  const fs::path r0 = fs::path(KERNELAB_SOURCE_DIR) / "tests" / "data" / "hta_traces" / "sampled_training_rank0.json.gz";
  const fs::path r1 = fs::path(KERNELAB_SOURCE_DIR) / ".." / "shared" / "data" / "traces" / "sampled_training_rank1.json.gz";
  if (!fs::exists(r1)) GTEST_SKIP() << r1 << " is absent";
  const trace::RanksReport r = trace::analyze_ranks({trace::load_rank_trace(r0.string()), trace::load_rank_trace(r1.string())});
  EXPECT_EQ(r.ranks[0].events, 10u);
  EXPECT_EQ(r.ranks[1].events, 10u);
  ASSERT_EQ(r.collectives.size(), 5u);
  // rank 0 at 1682725898125052, rank 1 at ...129911: 4859 us; then 3302, 84, 22328, 1292 us.
  const trace::Ns lags[] = {4'859'000, 3'302'000, 84'000, 22'328'000, 1'292'000};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(r.collectives[i].slowest, 1u) << i;
    EXPECT_EQ(r.collectives[i].lag, lags[i]) << i;
  }
  EXPECT_EQ(r.ranks[1].times_last, 5u);
}

}  // namespace kl::test
