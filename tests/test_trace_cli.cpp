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

// --steps complete reproduces HTA's default temporal breakdown (HTA's window: the events of the
// profiler steps before the last); the figures are HTA 0.5's on the same files (issue #19).
TEST(TraceCli, StepsCompleteGivesHtasDefaultBreakdown) {
  const std::string src = KERNELAB_SOURCE_DIR;
  const Result hta = run("trace analyze --json --steps complete " + src + "/tests/data/hta_traces/trace_diff_test.json.gz");
  ASSERT_EQ(hta.code, 0) << hta.err;
  const auto t = nlohmann::json::parse(hta.out)["temporal_breakdown"]["1"];
  EXPECT_NEAR(t["span_us"].get<double>() / 1000, 628.4, 0.05) << "HTA's default span; every event gives 745.2 ms";
  const Result all = run("trace analyze --json " + src + "/tests/data/hta_traces/trace_diff_test.json.gz");
  EXPECT_NEAR(nlohmann::json::parse(all.out)["temporal_breakdown"]["1"]["span_us"].get<double>() / 1000, 745.2, 0.05);
  const Result r50 = run("trace analyze --json --steps complete " + src + "/tests/data/pytorch_traces/resnet50_pytorch19_workers0.json.gz");
  ASSERT_EQ(r50.code, 0) << r50.err;
  const auto j = nlohmann::json::parse(r50.out);
  EXPECT_EQ(j["temporal_breakdown"]["0"]["span_us"].get<double>(), 830494.0);
  EXPECT_EQ(j["temporal_breakdown"]["0"]["idle_us"].get<double>(), 327463.0);
  EXPECT_EQ(j["steps"]["found"], 6);
  EXPECT_TRUE(j["steps"]["filtered"].get<bool>());
}

// A-B keeps the host events inside those steps and the GPU ops they launched; bad windows exit 2.
TEST(TraceCli, StepsRangeKeepsThoseStepsAndBadWindowsSayWhy) {
  const std::string f = std::string(KERNELAB_SOURCE_DIR) + "/tests/data/pytorch_traces/resnet50_pytorch19_workers0.json.gz";
  const auto count = [&](const std::string& steps) {
    const Result r = run("trace analyze --json --steps " + steps + " " + f);
    EXPECT_EQ(r.code, 0) << r.err;
    return r.code == 0 ? nlohmann::json::parse(r.out)["kernel_count"].get<int>() : -1;
  };
  const int s5 = count("5"), s6 = count("6"), both = count("5-6");
  EXPECT_GT(s5, 0);
  EXPECT_GT(s6, 0);
  EXPECT_EQ(both, s5 + s6) << "the steps do not overlap";
  EXPECT_LT(count("5-9"), count("all"));
  for (const char* bad : {"9-5", "x", "5-", "-3", "100-101"}) {
    const Result r = run(std::string("trace analyze --steps ") + bad + " " + f);
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_NE(r.err.find("--steps"), std::string::npos) << r.err;
  }
  const Result none = run("trace analyze --steps complete " + kTraces + "two_streams.json");
  ASSERT_EQ(none.code, 0) << none.err;
  EXPECT_NE(none.out.find("every event: 0 profiler steps"), std::string::npos) << none.out;
}

// --window keeps an annotated phase; a text no annotation holds exits 2 naming the annotations.
TEST(TraceCli, WindowKeepsAnAnnotatedPhase) {
  const Result r = run("trace analyze --json --window measure " + kTraces + "slow_calls.json");
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["kernel_count"], 2);
  EXPECT_EQ(j["window"]["text"], "measure");
  EXPECT_EQ(j["slow_api_calls"]["calls"], 0);
  const Result all = run("trace analyze --json " + kTraces + "slow_calls.json");
  ASSERT_EQ(all.code, 0) << all.err;
  const nlohmann::json a = nlohmann::json::parse(all.out);
  EXPECT_EQ(a["window"], nullptr);
  EXPECT_EQ(a["slow_api_calls"]["calls"], 3);
  EXPECT_EQ(a["findings"][0]["kind"], "slow_api_calls");
  const Result bad = run("trace analyze --window backward " + kTraces + "slow_calls.json");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--window 'backward': no user annotation's name contains it; the trace has 2 annotation names: "
                         "'[bench]|measure|forward' (1x), '[bench]|warmup|forward' (1x)"),
            std::string::npos)
      << bad.err;
  const Result ranks = run("trace analyze --window measure " + kTraces + "slow_calls.json " + kTraces + "two_steps.json");
  EXPECT_EQ(ranks.code, 2);
  EXPECT_NE(ranks.err.find("--window: applies to one trace"), std::string::npos) << ranks.err;
}

// The text report's launch lines: the short kernels waited for, and the slow API calls with their times.
TEST(TraceCli, TextListsTheShortKernelsWaitedForAndTheSlowCalls) {
  const Result r = run("trace analyze " + kTraces + "slow_calls.json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("short kernels (GPU time < launch call): 2 of 3; the GPU waited for 0 of them (0 ns of host wait before them), "
                       "1 launched by calls over 1 ms"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("CUDA API calls over 1 ms with no GPU op running: 3, 8.5 ms in all; cudaGetDeviceCount 5 ms at -7.2 ms from "
                       "the first GPU op; cudaLaunchKernel 2 ms at -2.1 ms from the first GPU op; cudaMalloc 1.5 ms at +100 us"),
            std::string::npos)
      << r.out;
}

// analyze and diff carry the memory peaks and the GPU metrics in their JSON.
TEST(TraceCli, MemoryAndGpuMetricsInJson) {
  const Result a = run("trace analyze --json " + kTraces + "memory.json");
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(nlohmann::json::parse(a.out)["memory"]["cuda:0"]["peak_allocated_bytes"], 4000);
  const Result d = run("trace diff --json " + kTraces + "memory.json " + kTraces + "memory.json");
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_EQ(nlohmann::json::parse(d.out)["memory"]["b"]["cuda:0"]["peak_allocated_bytes"], 4000);
  const Result g = run("trace analyze --json " + kTraces + "gpu_metrics.json");
  ASSERT_EQ(g.code, 0) << g.err;
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(g.out)["gpu_metrics"]["devices"]["0"]["est_sm_efficiency"].get<double>(), 0.375);
  const Result none = run("trace analyze --json " + kTraces + "two_streams.json");
  EXPECT_TRUE(nlohmann::json::parse(none.out)["gpu_metrics"]["devices"]["0"]["est_sm_efficiency"].is_null());
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
  EXPECT_EQ(text.out.find("CUDA API calls over 1 ms"), std::string::npos) << "neither trace has one";
  // Each side's slow API calls, and --window applied to both sides.
  const Result slow = run("trace diff " + kTraces + "slow_calls.json " + kTraces + "slow_calls.json --json");
  ASSERT_EQ(slow.code, 0) << slow.err;
  EXPECT_EQ(nlohmann::json::parse(slow.out)["b"]["slow_api_calls"]["calls"], 3);
  const Result measured = run("trace diff " + kTraces + "slow_calls.json " + kTraces + "slow_calls.json --window measure --json");
  ASSERT_EQ(measured.code, 0) << measured.err;
  const auto m = nlohmann::json::parse(measured.out);
  for (const char* side : {"a", "b"}) {
    EXPECT_EQ(m[side]["kernel_count"], 2) << side;
    EXPECT_EQ(m[side]["slow_api_calls"]["calls"], 0) << side;
  }
  const Result slow_text = run("trace diff " + kTraces + "slow_calls.json " + kTraces + "two_steps.json");
  ASSERT_EQ(slow_text.code, 0) << slow_text.err;
  EXPECT_NE(slow_text.out.find("CUDA API calls over 1 ms with no GPU op running (start-up, allocation): 3 (8.5 ms) -> 0 (0 ns)"),
            std::string::npos)
      << slow_text.out;
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
