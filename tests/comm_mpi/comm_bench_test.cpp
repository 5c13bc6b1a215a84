// `comm bench` prints nccl-tests' columns and closing lines, and its JSON carries the same fields
// with nccl-tests' bus-bandwidth factors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <vector>

#include "mpi_run.h"

namespace kl::test {

TEST(CommBench, PrintsTheNcclTestsColumnsForEveryAlgorithm) {
  const MpiResult r = run_mpi("comm bench allreduce --ranks 3 -b 8 -e 4K -f 8 -n 2 -w 1 --timeout 60 --dump-dir '" +
                              mpi_scratch("bench").string() + "'");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("out-of-place"), std::string::npos);
  EXPECT_NE(r.out.find("in-place"), std::string::npos);
  for (const char* algo : {"# algorithm: ring", "# algorithm: tree", "# algorithm: library"})
    EXPECT_NE(r.out.find(algo), std::string::npos) << algo;
  EXPECT_NE(r.out.find("# Avg bus bandwidth    : "), std::string::npos);
  EXPECT_NE(r.out.find("# Out of bounds values : 0 OK"), std::string::npos);
  EXPECT_NE(r.out.find("        4096          1024     float     sum      -1"), std::string::npos) << r.out;
}

TEST(CommBench, JsonHasEverySizeWithNcclTestsBusBandwidthFactors) {
  struct Case {
    const char* op;
    double factor;  // nccl-tests: allreduce 2(n-1)/n, the others (n-1)/n, n = 4
    const char* name;
  };
  // nccl-tests' and MPI's spellings name the same ops.
  for (const Case& c : {Case{"allreduce", 1.5, "allreduce"}, Case{"all_gather_perf", 0.75, "allgather"},
                        Case{"reduce-scatter", 0.75, "reducescatter"}, Case{"MPI_Alltoall", 0.75, "alltoall"}}) {
    const MpiResult r = run_mpi(std::string("comm bench ") + c.op + " --ranks 4 -b 1K -e 64K -f 4 -n 2 -w 1 --dtype bf16 --json --timeout 60 --dump-dir '" +
                                mpi_scratch("json").string() + "'");
    ASSERT_EQ(r.code, 0) << c.op << r.out << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["op"], c.name);
    EXPECT_EQ(j["ranks"], 4);
    EXPECT_EQ(j["dtype"], "bfloat16");
    EXPECT_EQ(j["wrong"], 0);
    for (const nlohmann::json& algo : j["algos"]) {
      ASSERT_EQ(algo["rows"].size(), 4u) << c.op;  // 1K, 4K, 16K, 64K
      EXPECT_EQ(algo["rows"][3]["size"], 65536) << c.op;
      for (const nlohmann::json& row : algo["rows"])
        for (const char* place : {"out_of_place", "in_place"}) {
          const nlohmann::json& p = row[place];
          EXPECT_NEAR(p["busbw_gbs"].get<double>(), p["algbw_gbs"].get<double>() * c.factor, 1e-9 + 1e-12 * p["busbw_gbs"].get<double>());
          EXPECT_NEAR(p["algbw_gbs"].get<double>(), row["size"].get<double>() / p["time_us"].get<double>() / 1e3,
                      1e-6 * p["algbw_gbs"].get<double>());
          EXPECT_EQ(p["wrong"], 0);
        }
    }
  }
}

TEST(CommBench, BadInputIsOneMessageAndExitTwo) {
  for (const char* args : {"comm bench allreduce --ranks 1", "comm bench allreduce --ranks 0", "comm bench broadcast",
                           "comm bench alltoall --algo ring", "comm bench allreduce --dtype fp8e4m3", "comm bench allreduce -b 1M -e 1K",
                           "comm bench allreduce --ranks 4 --inject rank=4,hang", "comm bench allreduce --inject rank=1,explode",
                           "comm bench allreduce --timeout 0", "comm check --counts 0", "comm bench allreduce --transport tcp",
                           "comm check --transport tcp"}) {
    const MpiResult r = run_mpi(args, 30);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find("kernelab: "), std::string::npos) << args << r.err;
    EXPECT_EQ(r.err.find("mpirun"), std::string::npos) << args << ": refused before mpirun starts\n" << r.err;
  }
}

// On a machine with no GPU, the NCCL transport says so and fails on every rank, hanging none (or,
// in a build without CUDA, is refused).
TEST(CommBench, NcclTransportWithoutAGpuSaysSo) {
  for (const char* args : {"comm bench allreduce --transport nccl --timeout 20", "comm check --transport nccl --timeout 20"}) {
    const MpiResult r = run_mpi(args, 60);
    EXPECT_NE(r.code, 0) << args;
    const bool no_gpu = r.err.find("--transport nccl: no CUDA device here") != std::string::npos;
    EXPECT_TRUE(no_gpu || r.err.find("--transport nccl: this kernelab was built without CUDA and NCCL") != std::string::npos)
        << args << "\n" << r.err;
    if (no_gpu) EXPECT_NE(r.err.find("comm: NCCL 2."), std::string::npos) << "the NCCL loaded, named first\n" << r.err;
  }
}

}  // namespace kl::test

namespace kl::test {

// --trace: one trace per rank, each collective an event with its sequence number, bytes, algorithm
// and peers; `trace analyze` on the folder names the rank delayed by --inject as the last to arrive.
TEST(CommBench, TracesOfEveryRankNameTheDelayedRankAsSlowest) {
  const std::filesystem::path dir = mpi_scratch("trace");
  const MpiResult r = run_mpi("comm bench allreduce --ranks 3 --algo ring -b 4K -e 16K -f 4 -n 2 -w 1 --timeout 60 "
                              "--inject rank=2,delay_ms=150,at=6 --trace '" + (dir / "traces").string() + "' --dump-dir '" +
                              (dir / "dumps").string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  for (int rank : {0, 1, 2}) {
    const nlohmann::json t = nlohmann::json::parse(read_all(dir / "traces" / ("rank-" + std::to_string(rank) + ".json")));
    EXPECT_EQ(t["distributedInfo"]["rank"], rank);
    std::vector<nlohmann::json> colls;
    for (const nlohmann::json& e : t["traceEvents"])
      if (e["ph"] == "X") colls.push_back(e);
    // 2 sizes x 2 placements x (1 checked + 1 warm-up + 2 timed calls)
    ASSERT_EQ(colls.size(), 16u) << rank;
    EXPECT_EQ(colls[0]["name"], "kernelab:allreduce");
    EXPECT_EQ(colls[0]["cat"], "user_annotation");
    EXPECT_EQ(colls[0]["args"]["algo"], "ring");
    EXPECT_EQ(colls[0]["args"]["bytes"], 4096);
    EXPECT_EQ(colls[0]["args"]["peers"].size(), 2u);
    EXPECT_EQ(colls[15]["args"]["seq"], 16);
  }
  const MpiResult a = run_mpi("trace analyze --json '" + (dir / "traces").string() + "'", 60);
  ASSERT_EQ(a.code, 0) << a.err;
  const nlohmann::json j = nlohmann::json::parse(a.out);
  EXPECT_EQ(j["matched_by"], "seq");
  ASSERT_EQ(j["collectives"].size(), 16u);
  EXPECT_EQ(j["collectives"][5]["seq"], 6);
  EXPECT_EQ(j["collectives"][5]["slowest_rank"], 2);
  EXPECT_GE(j["collectives"][5]["lag_us"].get<double>(), 150e3 * 0.95);
  EXPECT_EQ(j["slowest_rank"]["rank"], 2);
  for (const nlohmann::json& rank : j["ranks"]) {
    EXPECT_EQ(rank["comm_from"], "host_events");
    EXPECT_GT(rank["comm_us"].get<double>(), 0);
    EXPECT_EQ(rank["exposed_comm_us"], rank["comm_us"]);  // the bench computes nothing meanwhile
  }
  const MpiResult text = run_mpi("trace analyze '" + (dir / "traces").string() + "'", 60);
  EXPECT_NE(text.out.find("slowest rank: 2 (last to arrive in "), std::string::npos) << text.out;
}

// comm overlap --trace: the compute spans beside the non-blocking all-reduces, so the analyzer
// finds part of the communication under compute.
TEST(CommOverlap, TraceHasComputeSpansAndTheAnalyzerSeesOverlap) {
  const std::filesystem::path dir = mpi_scratch("overlap-trace");
  const MpiResult r = run_mpi("comm overlap --ranks 2 --bytes 4M --buckets 2 --compute-ms 5 --repeats 1 --timeout 60 --trace '" +
                              (dir / "traces").string() + "' --dump-dir '" + (dir / "dumps").string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  const MpiResult a = run_mpi("trace analyze --json '" + (dir / "traces").string() + "'", 60);
  ASSERT_EQ(a.code, 0) << a.err;
  const nlohmann::json j = nlohmann::json::parse(a.out);
  // (1 warm-up + 1 repeat) x (2 alone + 2 back to back + 2 overlapped) all-reduces per rank
  EXPECT_EQ(j["collectives"].size(), 12u);
  for (const nlohmann::json& rank : j["ranks"]) {
    EXPECT_GT(rank["compute_us"].get<double>(), 0);
    EXPECT_GT(rank["overlapped_us"].get<double>(), 0);
    EXPECT_LT(rank["exposed_comm_us"].get<double>(), rank["comm_us"].get<double>());
  }
}

TEST(CommOverlap, ReportsExposedCommunicationAndTheOverlapRatio) {
  const MpiResult r = run_mpi("comm overlap --ranks 2 --bytes 4M --buckets 2 --compute-ms 5 --repeats 1 --json --timeout 60 "
                              "--dump-dir '" + mpi_scratch("overlap").string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["buckets"], 2);
  for (const char* key : {"compute_s", "allreduce_s", "back_to_back_s", "overlapped_s"}) EXPECT_GT(j[key].get<double>(), 0) << key;
  EXPECT_NEAR(j["exposed_comm_s"].get<double>(), std::max(0.0, j["overlapped_s"].get<double>() - j["compute_s"].get<double>()), 1e-12);
  EXPECT_LE(j["overlap_ratio"].get<double>(), 1.0);
  EXPECT_EQ(j["wrong"], 0);
}

// The own ring overlapped through a communication thread: every all-reduce, the overlapped ones
// included, went through the session (numbered, recorded with algo ring, on the board), and the
// overlapped results are the sum over the ranks.
TEST(CommOverlap, OwnRingRunsOnACommunicationThread) {
  const std::filesystem::path dir = mpi_scratch("overlap-ring");
  const MpiResult r = run_mpi("comm overlap --algo ring --ranks 3 --bytes 3M --buckets 3 --compute-ms 5 --repeats 1 --json "
                              "--timeout 60 --dump-dir '" + dir.string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["algo"], "ring");
  EXPECT_EQ(j["wrong"], 0);
  EXPECT_NEAR(j["exposed_comm_s"].get<double>(), std::max(0.0, j["overlapped_s"].get<double>() - j["compute_s"].get<double>()), 1e-12);
  for (int rank = 0; rank < 3; ++rank) {
    const nlohmann::json d = nlohmann::json::parse(read_all(dir / ("rank-" + std::to_string(rank) + ".json")));
    EXPECT_EQ(d["reason"], "finished");
    // (1 warm-up + 1 repeat) x (3 alone + 3 back to back + 3 overlapped) ring all-reduces; the
    // barriers and the reductions of times are guarded waits, not collectives
    const nlohmann::json& records = d["records"];
    ASSERT_EQ(records.size(), 18u) << rank;
    for (std::size_t i = 0; i < records.size(); ++i) {
      EXPECT_EQ(records[i]["algo"], "ring");
      EXPECT_EQ(records[i]["seq"], i + 1);
      EXPECT_EQ(records[i]["bytes"], 1 << 20);
    }
  }
}

}  // namespace kl::test
