// The pieces of the fault handling that need no MPI: --inject parsing and its messages, the
// straggler analysis, and the doctor on dumps written by hand.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "bad_input.h"
#include "cli_util.h"
#include "comm/board.h"
#include "comm/doctor.h"
#include "comm/inject.h"
#include "comm/straggler.h"

namespace kl::test {

TEST(CommInject, ParsesTheThreeKindsAndNamesWhatIsWrong) {
  const comm::Injection d = comm::parse_injection("rank=2,delay_ms=150,at=5", 4);
  EXPECT_EQ(d.kind, comm::Injection::Kind::delay);
  EXPECT_EQ(d.rank, 2);
  EXPECT_EQ(d.delay_ms, 150);
  EXPECT_EQ(d.at, 5u);
  EXPECT_FALSE(comm::parse_injection("rank=1,delay_ms=3", 4).at);  // every collective
  EXPECT_EQ(comm::parse_injection("rank=3,crash", 4).at, 1u);
  EXPECT_EQ(comm::parse_injection("rank=0,hang,at=9", 4).kind, comm::Injection::Kind::hang);
  EXPECT_EQ(comm::injection_text(comm::parse_injection("rank=2,hang,at=4", 4)), "rank 2 hangs before seq 4");
  EXPECT_NE(bad_input_message([] { comm::parse_injection("rank=4,crash", 4); }).find("rank 4 is not below --ranks 4"), std::string::npos);
  EXPECT_NE(bad_input_message([] { comm::parse_injection("crash", 4); }).find("rank=R is missing"), std::string::npos);
  EXPECT_NE(bad_input_message([] { comm::parse_injection("rank=1", 4); }).find("delay_ms=T, crash or hang"), std::string::npos);
  EXPECT_NE(bad_input_message([] { comm::parse_injection("rank=1,delay_ms=-3", 4); }).find("delay_ms=-3"), std::string::npos);
  EXPECT_NE(bad_input_message([] { comm::parse_injection("rank=1,hang,at=0", 4); }).find("at=0"), std::string::npos);
  EXPECT_NE(bad_input_message([] { comm::parse_injection("rank=1,boom", 4); }).find("unknown part 'boom'"), std::string::npos);
  const comm::Injection end = comm::parse_injection("rank=1,hang,at=end", 4);
  EXPECT_EQ(end.point, comm::Injection::Point::end);
  EXPECT_FALSE(end.at);
  EXPECT_EQ(comm::injection_text(end), "rank 1 hangs before the end barrier");
  EXPECT_EQ(comm::parse_injection("rank=0,crash,at=start", 4).point, comm::Injection::Point::start);
  EXPECT_EQ(comm::injection_text(comm::parse_injection("rank=3,hang,at=init", 4)), "rank 3 hangs before MPI_Init");
  EXPECT_NE(bad_input_message([] { comm::parse_injection("rank=1,hang,at=middle", 4); }).find("at=middle"), std::string::npos);
}

namespace {

comm::Record rec(uint64_t seq, int64_t start_us) { return {"allreduce", "ring", seq, 64, {1, 3}, start_us, start_us + 100}; }

}  // namespace

TEST(CommStraggler, NamesTheLateRankItsLagAndWhere) {
  std::vector<std::vector<comm::Record>> ranks(3);
  for (uint64_t seq = 1; seq <= 4; ++seq)
    for (int r = 0; r < 3; ++r) ranks[std::size_t(r)].push_back(rec(seq, int64_t(seq) * 1'000'000 + (r == 2 && seq == 3 ? 250'000 : r * 100)));
  ranks[1].push_back(rec(5, 9'000'000));  // only one rank recorded seq 5: not compared
  const comm::StragglerReport s = comm::find_straggler(ranks);
  EXPECT_EQ(s.rank, 2);
  EXPECT_EQ(s.collectives, 4);
  EXPECT_EQ(s.worst_seq, 3u);
  EXPECT_DOUBLE_EQ(s.max_lag_ms, 250);
  EXPECT_EQ(s.times_last, 4);
  EXPECT_EQ(comm::straggler_text(s, 20).rfind("straggler: rank 2 lag 250.0 ms at allreduce seq 3", 0), 0u) << comm::straggler_text(s, 20);
  EXPECT_EQ(comm::straggler_text(s, 300).rfind("no straggler", 0), 0u);
}

TEST(CommDoctor, NamesTheRankThatNeverEnteredFromHandWrittenDumps) {
  const std::filesystem::path dir = scratch_dir() / "doctor";
  std::filesystem::create_directories(dir);
  for (int r = 0; r < 3; ++r) {
    nlohmann::json records = nlohmann::json::array();
    for (uint64_t seq = 1; seq <= (r == 1 ? 6u : 7u); ++seq) {
      comm::Record x = rec(seq, int64_t(seq) * 1000);
      if (seq == 7) x.end_us = 0;
      records.push_back(comm::record_json(x));
    }
    const nlohmann::json in_flight = r == 1 ? nlohmann::json() : records.back();
    std::ofstream(dir / ("rank-" + std::to_string(r) + ".json"))
        << nlohmann::json{{"rank", r}, {"size", 3}, {"reason", r == 1 ? "terminated by SIGTERM" : "timeout"},
                          {"in_flight", in_flight}, {"records", records}, {"dumped_us", 3'007'000}}.dump();
  }
  const comm::Diagnosis d = comm::diagnose(dir.string(), 20);
  ASSERT_FALSE(d.findings.empty());
  EXPECT_EQ(d.findings[0], "rank 1 never entered allreduce seq 7 (its last: allreduce seq 6, completed); ranks 0, 2 waited in it");
  EXPECT_FALSE(d.healthy);
  EXPECT_EQ(d.json["behind"], nlohmann::json::array({1}));
  EXPECT_NE(bad_input_message([&] { comm::diagnose((dir / "absent").string(), 20); }).find("not a folder"), std::string::npos);
  const CliResult cli = run_kernelab("comm doctor '" + dir.string() + "'");
  EXPECT_EQ(cli.code, 1) << cli.out << cli.err;  // a rank behind: exit 1
  EXPECT_NE(cli.out.find("rank 1 never entered allreduce seq 7"), std::string::npos) << cli.out;
}

// Ranks 0 and 2 timed out in the end barrier; rank 1's board slot says it is still running (its
// dump, written when mpirun ended it, is not in a collective or a barrier).
TEST(CommDoctor, NamesTheRankThatNeverReachedTheEndBarrier) {
  const std::filesystem::path dir = scratch_dir() / "doctor-end";
  std::filesystem::create_directories(dir);
  std::ofstream board(dir / "board", std::ios::binary);
  for (int r = 0; r < 3; ++r) {
    const int64_t slot[4] = {0, 5, 5, int64_t(r == 1 ? comm::Stage::running : comm::Stage::end_barrier)};
    board.write(reinterpret_cast<const char*>(slot), sizeof slot);
    nlohmann::json records = nlohmann::json::array();
    for (uint64_t seq = 1; seq <= 5; ++seq) records.push_back(comm::record_json(rec(seq, int64_t(seq) * 1000)));
    const nlohmann::json waiting = r == 1 ? nlohmann::json() : nlohmann::json{{"what", "the end barrier"}, {"start_us", 10'000}};
    std::ofstream(dir / ("rank-" + std::to_string(r) + ".json"))
        << nlohmann::json{{"rank", r}, {"size", 3}, {"reason", r == 1 ? "terminated by SIGTERM" : "timeout: waited more than 3 s"},
                          {"in_flight", nullptr}, {"waiting", waiting}, {"records", records}, {"dumped_us", 3'010'000}}.dump();
  }
  board.close();
  const comm::Diagnosis d = comm::diagnose(dir.string(), 20);
  ASSERT_FALSE(d.findings.empty());
  EXPECT_EQ(d.findings[0], "rank 1 never reached the end barrier (running; its last: allreduce seq 5, completed); ranks 0, 2 waited in it");
  EXPECT_EQ(d.findings[1], "rank 0 was waiting in the end barrier for 3.0 s: timeout: waited more than 3 s");
  EXPECT_FALSE(d.healthy);
  EXPECT_EQ(d.json["short_of_barrier"], nlohmann::json::array({1}));
}

}  // namespace kl::test
