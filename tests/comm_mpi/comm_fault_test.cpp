// Injected faults on rank 2 of 4: a hang or a crash never leaves the others waiting past the
// timeout plus 5 s, and the messages and `comm doctor` name rank 2 and the collective's sequence
// number; a delay is reported as a straggler with its lag.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "mpi_run.h"

namespace kl::test {

namespace {

constexpr int kTimeout = 3;

MpiResult faulty_run(const std::string& inject, const std::filesystem::path& dir) {
  return run_mpi("comm bench allreduce --ranks 4 --algo ring -b 64K -e 64K -n 4 -w 1 --timeout " + std::to_string(kTimeout) +
                     " --inject " + inject + " --dump-dir '" + dir.string() + "'",
                 60);
}

// Every surviving rank left a dump written when it gave up on seq 4, at most timeout + 5 s after
// it started waiting in it, and its message names rank 2.
void expect_survivors_gave_up_in_time(const MpiResult& r, const std::filesystem::path& dir) {
  EXPECT_NE(r.code, 0) << r.out << r.err;
  for (int rank : {0, 1, 3}) {
    const std::filesystem::path dump = dir / ("rank-" + std::to_string(rank) + ".json");
    ASSERT_TRUE(std::filesystem::exists(dump)) << dump << "\n" << r.err;
    const nlohmann::json j = nlohmann::json::parse(read_all(dump));
    ASSERT_FALSE(j["in_flight"].is_null()) << rank << j.dump();
    EXPECT_EQ(j["in_flight"]["seq"], 4) << rank;
    const double waited_s = double(j["dumped_us"].get<int64_t>() - j["in_flight"]["start_us"].get<int64_t>()) / 1e6;
    EXPECT_LE(waited_s, kTimeout + 5) << rank;
    const std::string message = j["message"];
    EXPECT_NE(message.find("allreduce seq 4"), std::string::npos) << message;
    EXPECT_NE(message.find("rank 2 (entered up to seq 3"), std::string::npos) << message;
    EXPECT_NE(r.err.find("kernelab comm: rank " + std::to_string(rank) + ": "), std::string::npos) << r.err;
  }
}

}  // namespace

TEST(CommFaults, HangOnRankTwoIsNamedByEverySurvivorAndTheDoctor) {
  const std::filesystem::path dir = mpi_scratch("hang");
  const MpiResult r = faulty_run("rank=2,hang,at=4", dir);
  EXPECT_LT(r.seconds, 30) << r.err;
  expect_survivors_gave_up_in_time(r, dir);
  EXPECT_NE(r.err.find("timeout: waited more than 3 s in allreduce seq 4"), std::string::npos) << r.err;
  const MpiResult d = run_mpi("comm doctor '" + dir.string() + "'", 30);
  EXPECT_EQ(d.code, 1) << d.err;  // it names a rank behind
  EXPECT_NE(d.out.find("rank 2 never entered allreduce seq 4 (its last: allreduce seq 3, completed); ranks 0, 1, 3 waited in it"),
            std::string::npos) << d.out;
}

TEST(CommFaults, CrashOnRankTwoIsNamedByEverySurvivorAndTheDoctor) {
  const std::filesystem::path dir = mpi_scratch("crash");
  const MpiResult r = faulty_run("rank=2,crash,at=4", dir);
  EXPECT_LT(r.seconds, 30) << r.err;
  expect_survivors_gave_up_in_time(r, dir);
  for (int rank : {0, 1, 3}) {  // each saw rank 2's process end on the board, before its own timeout
    const nlohmann::json j = nlohmann::json::parse(read_all(dir / ("rank-" + std::to_string(rank) + ".json")));
    EXPECT_EQ(j["reason"], "rank 2's process ended while this rank waited") << rank;
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "rank-2.json"));
  const MpiResult d = run_mpi("comm doctor --json '" + dir.string() + "'", 30);
  ASSERT_EQ(d.code, 1) << d.err;
  EXPECT_EQ(nlohmann::json::parse(d.out)["healthy"], false);
  const nlohmann::json j = nlohmann::json::parse(d.out);
  EXPECT_EQ(j["behind"], nlohmann::json::array({2}));
  EXPECT_EQ(j["no_dump"], nlohmann::json::array({2}));
  EXPECT_EQ(j["front_seq"], 4);
  EXPECT_EQ(j["ranks"][2]["alive"], false);
  EXPECT_NE(j["findings"][0].get<std::string>().find("rank 2 never entered allreduce seq 4"), std::string::npos) << d.out;
}

TEST(CommFaults, DelayOnRankTwoIsReportedAsAStragglerWithItsLag) {
  const std::filesystem::path dir = mpi_scratch("delay");
  const MpiResult r = run_mpi("comm bench allreduce --ranks 4 --algo ring -b 64K -e 64K -n 4 -w 1 --timeout 30 --json "
                              "--inject rank=2,delay_ms=400,at=5 --dump-dir '" + dir.string() + "'", 60);
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json s = nlohmann::json::parse(r.out)["straggler"];
  EXPECT_EQ(s["rank"], 2);
  EXPECT_EQ(s["is_straggler"], true);
  EXPECT_EQ(s["seq"], 5);
  EXPECT_GE(s["max_lag_ms"].get<double>(), 400 * 0.9);
  const MpiResult d = run_mpi("comm doctor '" + dir.string() + "'", 30);
  EXPECT_EQ(d.code, 0) << d.err;  // a straggler arrives: the run is healthy
  EXPECT_NE(d.out.find("healthy: all 4 ranks completed"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("straggler: rank 2 lag "), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("at allreduce seq 5"), std::string::npos) << d.out;
}

// A rank that hangs before the run's start or end barrier: the others wait there, not in a
// collective, and the watchdog still ends them within timeout + 5 s naming rank 2.
void expect_barrier_hang_named(const std::string& where, const std::string& stage_of_rank2) {
  const std::filesystem::path dir = mpi_scratch("hang-" + where);
  const MpiResult r = faulty_run("rank=2,hang,at=" + where, dir);
  EXPECT_NE(r.code, 0) << r.out << r.err;
  EXPECT_LT(r.seconds, 30) << r.err;
  for (int rank : {0, 1, 3}) {
    const std::filesystem::path dump = dir / ("rank-" + std::to_string(rank) + ".json");
    ASSERT_TRUE(std::filesystem::exists(dump)) << dump << "\n" << r.err;
    const nlohmann::json j = nlohmann::json::parse(read_all(dump));
    ASSERT_FALSE(j["waiting"].is_null()) << rank << j.dump();
    EXPECT_EQ(j["waiting"]["what"], "the " + where + " barrier") << rank;
    const double waited_s = double(j["dumped_us"].get<int64_t>() - j["waiting"]["start_us"].get<int64_t>()) / 1e6;
    EXPECT_GE(waited_s, kTimeout) << rank;
    EXPECT_LE(waited_s, kTimeout + 5) << rank;
    const std::string message = j["message"];
    EXPECT_NE(message.find("timeout: waited more than 3 s in the " + where + " barrier"), std::string::npos) << message;
    EXPECT_NE(message.find("not heard from: rank 2 (" + stage_of_rank2), std::string::npos) << message;
  }
  const MpiResult d = run_mpi("comm doctor '" + dir.string() + "'", 30);
  EXPECT_EQ(d.code, 1) << d.out << d.err;
  EXPECT_NE(d.out.find("rank 2 never reached the " + where + " barrier"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("ranks 0, 1, 3 waited in it"), std::string::npos) << d.out;
}

TEST(CommFaults, HangBeforeTheStartBarrierIsNamed) { expect_barrier_hang_named("start", "setting up, entered up to seq 0"); }

TEST(CommFaults, HangBeforeTheEndBarrierIsNamed) { expect_barrier_hang_named("end", "running, entered up to seq 12"); }

// Before the board exists: rank 2 hangs before MPI_Init, where the others wait for it. Each
// survivor gives up after the timeout saying it waited in MPI_Init; rank 2's own message says
// where it was (its timeout or mpirun's SIGTERM, whichever comes first). Every rank dumps, and the
// doctor names rank 2.
TEST(CommFaults, HangBeforeMpiInitIsNamed) {
  const std::filesystem::path dir = mpi_scratch("init");
  const MpiResult r = faulty_run("rank=2,hang,at=init", dir);
  EXPECT_NE(r.code, 0);
  EXPECT_LT(r.seconds, 30) << r.err;
  for (int rank : {0, 1, 3}) {
    EXPECT_NE(r.err.find("kernelab comm: rank " + std::to_string(rank) + ": timeout: waited more than 3 s in MPI_Init, at start-up"),
              std::string::npos) << r.err;
    const std::filesystem::path dump = dir / ("rank-" + std::to_string(rank) + ".json");
    ASSERT_TRUE(std::filesystem::exists(dump)) << dump << "\n" << r.err;
    const nlohmann::json j = nlohmann::json::parse(read_all(dump));
    EXPECT_EQ(j["startup_phase"], "in MPI_Init") << j.dump();
    EXPECT_EQ(j["size"], 4) << j.dump();
    EXPECT_GE(double(j["dumped_us"].get<int64_t>() - j["waiting"]["start_us"].get<int64_t>()) / 1e6, kTimeout) << j.dump();
  }
  EXPECT_NE(r.err.find("before MPI_Init, at start-up"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("kernelab comm: rank 2: timeout: waited more than 3 s in MPI_Init"), std::string::npos) << r.err;
  const MpiResult d = run_mpi("comm doctor '" + dir.string() + "'", 30);
  EXPECT_EQ(d.code, 1) << d.out << d.err;
  EXPECT_NE(d.out.find("rank 2 never reached MPI_Init ("), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("ranks 0, 1, 3 waited at start-up"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("rank 0 was waiting in MPI_Init, at start-up, for "), std::string::npos) << d.out;
}

// Rank 2 dies before MPI_Init: mpirun ends the others, each dumps where it waited, and the doctor
// names rank 2 as the one that left no dump.
TEST(CommFaults, CrashBeforeMpiInitIsNamedByTheDoctor) {
  const std::filesystem::path dir = mpi_scratch("init-crash");
  const MpiResult r = faulty_run("rank=2,crash,at=init", dir);
  EXPECT_NE(r.code, 0);
  EXPECT_LT(r.seconds, 30) << r.err;
  const MpiResult d = run_mpi("comm doctor '" + dir.string() + "'", 30);
  EXPECT_EQ(d.code, 1) << d.out << d.err;
  EXPECT_NE(d.out.find("rank 2 left no dump: it never started, or its process died or was killed before MPI_Init"),
            std::string::npos) << d.out << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "rank-2.json"));
}

TEST(CommFaults, DoctorRefusesAFolderWithoutDumps) {
  const MpiResult d = run_mpi("comm doctor '" + mpi_scratch("empty").string() + "'", 30);
  EXPECT_EQ(d.code, 2);
  EXPECT_NE(d.err.find("no rank-R.json dumps"), std::string::npos) << d.err;
}

}  // namespace kl::test
