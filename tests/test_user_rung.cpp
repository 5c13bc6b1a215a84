// `check softmax --rung FILE.cu` as a user runs it: a correct softmax rung the project has never
// seen (tests/data/rungs/softmax_warp_online.cu) passes the op's whole sweep in the simulator; a
// subtly wrong one (the last partial chunk of 32 columns dropped) fails and names a shape whose
// column count is not a multiple of 32; a file that does not compile shows the compiler's message
// on its own line and exits 2, as a rung of another op or another backend does; a rung with a
// race fails `check --race-check`; `sim profile --rung` counts the user's kernel beside the
// built-in ones.
#include "test_sim_util.h"
#if KERNELAB_HAVE_SIM
#include <gmock/gmock.h>

#include <nlohmann/json.hpp>

#include "cli_util.h"

namespace kl::test {
namespace {

using ::testing::HasSubstr;

std::string rung_file(const std::string& name) { return std::string("'") + KERNELAB_SOURCE_DIR "/tests/data/rungs/" + name + "'"; }

// The builds cached in the build tree, not the user's home.
const std::string kCache = "KERNELAB_SIM_CACHE='" + (std::filesystem::path(KERNELAB_BINARY).parent_path() / "sim-cache").string() + "'";

TEST(UserRung, ACorrectRungOfTheUsersOwnPassesTheWholeSweepInTheSimulator) {
  const CliResult r = run_kernelab("check softmax --rung " + rung_file("softmax_warp_online.cu") + " --json", kCache);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["passed"], true);
  std::set<std::string> dtypes;
  for (const nlohmann::json& row : j["results"]) {
    EXPECT_EQ(row["variant"], "user_warp_online") << row.dump();  // only the file's rung
    EXPECT_EQ(row["backend"], "sim");
    EXPECT_GT(row["passed"].get<int>(), 0) << row.dump();
    EXPECT_EQ(row["failed"], 0) << row.dump();
    dtypes.insert(row["dtype"].get<std::string>());
  }
  EXPECT_EQ(dtypes, (std::set<std::string>{"fp32", "fp16", "bf16"}));
}

TEST(UserRung, ARungThatDropsTheLastPartialChunkFailsNamingTheShape) {
  const CliResult r = run_kernelab("check softmax --rung " + rung_file("softmax_drops_last_chunk.cu") + " --json", kCache);
  EXPECT_EQ(r.code, 1) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["passed"], false);
  for (const nlohmann::json& row : j["results"]) {
    EXPECT_GT(row["failed"].get<int>(), 0) << row.dump();
    const std::string shape = row["first_failure"];
    const std::size_t at = shape.find("cols=");
    ASSERT_NE(at, std::string::npos) << shape;
    EXPECT_NE(std::stol(shape.substr(at + 5)) % 32, 0) << shape;  // a partial chunk is where it goes wrong
  }
}

TEST(UserRung, AFileThatDoesNotCompileShowsTheCompilersMessageOnItsOwnLine) {
  const CliResult r = run_kernelab("check softmax --rung " + rung_file("does_not_compile.cu"), kCache);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("does_not_compile.cu:6:"));
  EXPECT_THAT(r.err, HasSubstr("undefined_name_in_a_user_rung"));
  EXPECT_THAT(r.err, HasSubstr("does not compile for the simulator"));
  const CliResult other = run_kernelab("check layernorm --rung " + rung_file("softmax_warp_online.cu"), kCache);
  EXPECT_EQ(other.code, 2);
  EXPECT_THAT(other.err, HasSubstr("is of op softmax, not layernorm"));
  const CliResult cpu = run_kernelab("check softmax --backend cpu --rung " + rung_file("softmax_warp_online.cu"), kCache);
  EXPECT_EQ(cpu.code, 2);
  EXPECT_THAT(cpu.err, HasSubstr("a rung file runs on --backend sim or cuda"));
}

// The planted race (tests/data/rungs/reduce_tree_missing_barrier.cu) leaves the usual thread
// order's answer right often enough that a plain check need not see it; --race-check fails every
// shape where it shows, exit 1, with the simulator's message as the first failure.
TEST(UserRung, TheRaceCheckFailsARungWithAMissingBarrier) {
  const CliResult r = run_kernelab("check reduce --race-check --rung " + rung_file("reduce_tree_missing_barrier.cu") + " --json", kCache);
  EXPECT_EQ(r.code, 1) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["passed"], false);
  ASSERT_FALSE(j["results"].empty());
  for (const nlohmann::json& row : j["results"]) {
    EXPECT_GT(row["failed"].get<int>(), 0) << row.dump();
    EXPECT_THAT(row["first_failure"].get<std::string>(), HasSubstr("race in kernel '(reduce_tree_racy<E, Op>)'")) << row.dump();
  }
  const CliResult cuda = run_kernelab("check reduce --race-check --backend cuda --rung " + rung_file("reduce_tree_missing_barrier.cu"), kCache);
  EXPECT_EQ(cuda.code, 2);
  EXPECT_THAT(cuda.err, HasSubstr("--race-check runs in the simulator"));
}

TEST(UserRung, SimProfileCountsTheUsersKernelBesideTheBuiltInOnes) {
  const CliResult r = run_kernelab("sim profile softmax --rung " + rung_file("softmax_warp_online.cu") +
                                   " --variant user_warp_online,cuda_fused_block --rows 64 --cols 1000 --json", kCache);
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out)["rungs"];
  ASSERT_EQ(j.size(), 2u) << r.out;
  std::set<std::string> names;
  for (const nlohmann::json& rung : j) {
    names.insert(rung["variant"].get<std::string>());
    EXPECT_EQ(rung["checked"], true) << rung.dump();
    ASSERT_FALSE(rung["kernels"].empty()) << rung.dump();
    // x read once and y written once at the least: the modelled DRAM bytes cannot be below that
    EXPECT_GE(rung["model_dram_bytes"].get<double>(), 0.99 * rung["min_bytes"].get<double>()) << rung.dump();
  }
  EXPECT_EQ(names, (std::set<std::string>{"user_warp_online", "cuda_fused_block"}));
}

#if KERNELAB_HAVE_CUDA
// bench --rung: nvcc builds the file for sm_80 and sm_90a into a library that shares kernelab's
// CUDA runtime, and the rung joins the op's ladder: timed on a GPU, listed as not run without one.
TEST(UserRung, BenchBuildsTheFileWithNvccAndPutsItOnTheLadder) {
  const CliResult r = run_kernelab("bench softmax --rung " + rung_file("softmax_warp_online.cu") + " --rows 64 --cols 1000", kCache);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("user_warp_online"));
}
#endif

}  // namespace
}  // namespace kl::test
#endif  // KERNELAB_HAVE_SIM
