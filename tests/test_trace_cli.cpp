// `kernelab trace analyze|diff` and `bench --trace` as a user runs them: exit codes (0 a report,
// 1 a machine that cannot do it, 2 bad input) and messages that name the problem.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli_util.h"

namespace fs = std::filesystem;

namespace {

using Result = kl::test::CliResult;
using kl::test::slurp;

const std::string kTraces = std::string(KERNELAB_SOURCE_DIR) + "/tests/data/traces/";

fs::path scratch(const std::string& name) { return kl::test::scratch_dir() / name; }
Result run(const std::string& args) { return kl::test::run_kernelab(args); }

TEST(TraceCli, AnalyzeJson) {
  const Result r = run("trace analyze --json --gap-us 30 " + kTraces + "two_streams.json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["kernel_count"], 4);
  EXPECT_DOUBLE_EQ(j["devices"]["0"]["idle_us"].get<double>(), 85.0);
  EXPECT_EQ(j["findings"][0]["rank"], 1);
  EXPECT_EQ(j["gaps"]["devices"]["0"]["count"], 2);
}

TEST(TraceCli, AnalyzeTextStatesTheThresholdAndItsUnit) {
  const Result r = run("trace analyze --kernel-wait-us 12.5 " + kTraces + "two_streams.json.gz");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("kernel wait = gap < 12.5 us"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("findings"), std::string::npos);
}

TEST(TraceCli, BadInputExitsTwoWithAMessage) {
  const std::string gz = slurp(kTraces + "two_streams.json.gz");
  std::ofstream(scratch("cut.json.gz"), std::ios::binary) << gz.substr(0, gz.size() / 2);
  std::ofstream(scratch("bad.json")) << R"({"traceEvents": [{"ph": "X" "cat": "kernel"}]})";
  std::ofstream(scratch("notrace.json")) << R"({"hello": "world"})";
  struct Case {
    std::string args, message;
  };
  for (const Case& c : {Case{"trace analyze " + scratch("cut.json.gz").string(), "truncated gzip"},
                        Case{"trace analyze " + scratch("bad.json").string(), "expected ',' or '}'"},
                        Case{"trace analyze " + scratch("notrace.json").string(), "not a Chrome trace"},
                        Case{"trace analyze " + scratch("missing.json").string(), "cannot read trace file"},
                        Case{"trace analyze --kernel-wait-us -1 " + kTraces + "two_streams.json", "kernel-wait-us"},
                        Case{"trace diff " + kTraces + "two_streams.json " + scratch("bad.json").string(), "bad.json"}}) {
    const Result r = run(c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << "\n" << r.err;
  }
}

TEST(TraceCli, CpuOnlyTraceIsANoGpuActivityReport) {
  const Result r = run("trace analyze --json " + kTraces + "cpu_only.json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j["gpu_activity"].get<bool>());
  EXPECT_EQ(j["findings"][0]["kind"], "no_gpu_activity");
  const Result text = run("trace analyze " + kTraces + "other_vendor.json");
  EXPECT_EQ(text.code, 0);
  EXPECT_NE(text.out.find("no GPU activity"), std::string::npos) << text.out;
}

TEST(TraceCli, Diff) {
  const Result r = run("trace diff --json " + kTraces + "two_streams.json " + kTraces + "two_devices_array.json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["kernel_count_delta"], -2);
  EXPECT_DOUBLE_EQ(j["kernel_time_delta_us"].get<double>(), 25.25 - 75.0);
  const Result text = run("trace diff " + kTraces + "two_streams.json " + kTraces + "two_streams.json.gz");
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("kernels by time change"), std::string::npos);
}

// Without a GPU (or without CUPTI in the build) --trace refuses before timing anything.
TEST(TraceCli, BenchTraceWithoutAGpuSaysSo) {
  if (fs::exists("/dev/nvidia0")) GTEST_SKIP() << "a GPU is present: scripts/device-check.sh exercises --trace";
  const Result r = run("bench transpose --backend cpu --rows 64 --cols 64 --trace " + scratch("t.json").string());
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("--trace"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no trace written"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(scratch("t.json")));
}

}  // namespace
