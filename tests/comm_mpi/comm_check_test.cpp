// Every algorithm of every collective against the float64 reference and the MPI library, on 2, 3
// and 4 MPI ranks, counts 1, 7, 1000 and 2^20+3, fp32, fp16, bf16, sum and max, out of place and
// in place (`comm check`; the tolerances are in src/comm/data.h).
#include <gtest/gtest.h>

#include <regex>

#include "mpi_run.h"

namespace kl::test {

class CommCheck : public ::testing::TestWithParam<std::tuple<int, std::string>> {};

TEST_P(CommCheck, EveryAlgorithmAgreesWithTheReferenceAndTheLibrary) {
  const auto [ranks, op] = GetParam();
  const MpiResult r = run_mpi("comm check --ranks " + std::to_string(ranks) + " --ops " + op + " --timeout 60 --dump-dir '" +
                              mpi_scratch("check").string() + "'");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("comm check: (\\d+) of (\\d+) cases passed on (\\d+) ranks"))) << r.out << r.err;
  EXPECT_EQ(m[1], m[2]);
  EXPECT_EQ(std::stoi(m[3]), ranks);
  // 3 dtypes x 4 counts x 2 placements x (2 reductions for allreduce and reducescatter) x algorithms
  const int algos = op == "allreduce" ? 3 : 2, reductions = op == "allreduce" || op == "reducescatter" ? 2 : 1;
  EXPECT_EQ(std::stoi(m[2]), 3 * 4 * 2 * reductions * algos);
  EXPECT_EQ(r.out.find("WRONG"), std::string::npos) << r.out;
}

INSTANTIATE_TEST_SUITE_P(RanksAndOps, CommCheck,
                         ::testing::Combine(::testing::Values(2, 3, 4),
                                            ::testing::Values("allreduce", "allgather", "reducescatter", "alltoall")),
                         [](const auto& info) {
                           return std::get<1>(info.param) + "_" + std::to_string(std::get<0>(info.param)) + "_ranks";
                         });

}  // namespace kl::test
