// `comm bench` prints nccl-tests' columns and closing lines, and its JSON carries the same fields
// with nccl-tests' bus-bandwidth factors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "comm_mpi/mpi_run.h"

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
  };
  for (const Case& c : {Case{"allreduce", 1.5}, Case{"allgather", 0.75}, Case{"reducescatter", 0.75}, Case{"alltoall", 0.75}}) {
    const MpiResult r = run_mpi(std::string("comm bench ") + c.op + " --ranks 4 -b 1K -e 64K -f 4 -n 2 -w 1 --dtype bf16 --json --timeout 60 --dump-dir '" +
                                mpi_scratch("json").string() + "'");
    ASSERT_EQ(r.code, 0) << c.op << r.out << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
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
  for (const char* args : {"comm bench allreduce --ranks 1", "comm bench broadcast", "comm bench alltoall --algo ring",
                           "comm bench allreduce --dtype fp8e4m3", "comm bench allreduce -b 1M -e 1K",
                           "comm bench allreduce --ranks 4 --inject rank=4,hang", "comm bench allreduce --inject rank=1,explode",
                           "comm bench allreduce --timeout 0", "comm check --counts 0"}) {
    const MpiResult r = run_mpi(args, 30);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find("kernelab: "), std::string::npos) << args << r.err;
    EXPECT_EQ(r.err.find("mpirun"), std::string::npos) << args << ": refused before mpirun starts\n" << r.err;
  }
}

}  // namespace kl::test
