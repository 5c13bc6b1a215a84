// `kernelab roofline` and `kernelab explain` as a user runs them: the JSON keys and values of the
// must-show cases, the explain text of attention, and exit code 2 for bad input.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli_util.h"

namespace {

using Result = kl::test::CliResult;
Result kernelab(const std::string& args) { return kl::test::run_kernelab(args); }

nlohmann::json roofline_json(const std::string& args) {
  Result r = kernelab("roofline " + args + " --json");
  EXPECT_EQ(r.code, 0) << r.err;
  try {
    return nlohmann::json::parse(r.out);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not JSON: " << e.what() << "\n" << r.out;
    return nlohmann::json::object();
  }
}

void expect_design_keys(const nlohmann::json& j) {
  for (const char* key : {"op", "gpu", "dtype", "flops", "bytes", "intensity", "ridge", "bound", "t_compute_s",
                          "t_memory_s", "t_lower_bound_s", "sources"})
    EXPECT_TRUE(j.contains(key)) << key << " missing in " << j.dump();
  EXPECT_TRUE(j.at("bound") == "memory" || j.at("bound") == "compute");
  EXPECT_FALSE(j.at("sources").at("peak_flops").get<std::string>().empty());
  EXPECT_FALSE(j.at("sources").at("bandwidth").get<std::string>().empty());
}

#define EXPECT_JSON_REL(a, b) EXPECT_NEAR((a).get<double>(), (b), 1e-9 * std::abs(b))

TEST(RooflineCli, GemmOnH100Sxm) {
  // Hand-computed in test_model.cpp (Analyze.Gemm4096Bf16OnH100Sxm).
  nlohmann::json j = roofline_json("gemm --m 4096 --n 4096 --k 4096 --dtype bf16 --gpu h100-sxm");
  expect_design_keys(j);
  EXPECT_EQ(j["op"], "gemm");
  EXPECT_EQ(j["gpu"], "h100-sxm");
  EXPECT_EQ(j["dtype"], "bf16");
  EXPECT_EQ(j["flops"], 137438953472.0);
  EXPECT_EQ(j["bytes"], 100663296.0);
  EXPECT_NEAR(j["intensity"].get<double>(), 1365.33, 0.01);
  EXPECT_NEAR(j["ridge"].get<double>(), 295.34, 0.01);
  EXPECT_EQ(j["bound"], "compute");
  EXPECT_JSON_REL(j["t_lower_bound_s"], 1.3891141446533252e-4);
}

TEST(RooflineCli, GqaDecodeOnH200) {
  nlohmann::json j = roofline_json(
      "attention --batch 1 --heads 32 --kv-heads 8 --seq-q 1 --seq-kv 8192 --head-dim 128 --dtype bf16 --gpu h200");
  expect_design_keys(j);
  EXPECT_EQ(j["flops"], 134217728.0);
  EXPECT_EQ(j["bytes"], 33570816.0);
  EXPECT_EQ(j["ridge"], 206.125);
  EXPECT_EQ(j["bound"], "memory");
  EXPECT_JSON_REL(j["t_lower_bound_s"], 6.99392e-6);
  EXPECT_EQ(j["schedule"], "flash");
}

TEST(RooflineCli, RmsnormOnA100) {
  nlohmann::json j = roofline_json("rmsnorm --rows 8192 --cols 8192 --dtype bf16 --gpu a100-sxm-80gb");
  expect_design_keys(j);
  EXPECT_EQ(j["flops"], 268435456.0);
  EXPECT_EQ(j["bytes"], 268451840.0);
  EXPECT_EQ(j["bound"], "memory");
  EXPECT_JSON_REL(j["t_lower_bound_s"], 1.3165857773418343e-4);
}

TEST(RooflineCli, AllreduceOnH100Sxm) {
  nlohmann::json j = roofline_json("allreduce --bytes 1073741824 --ranks 8 --gpu h100-sxm");
  expect_design_keys(j);
  EXPECT_EQ(j["flops"], 0.0);
  EXPECT_EQ(j["bytes"], 1879048192.0);  // on the busiest link
  EXPECT_EQ(j["bound"], "memory");      // link-bound
  EXPECT_EQ(j["bandwidth_kind"], "nvlink");
  EXPECT_JSON_REL(j["t_lower_bound_s"], 4.175662648888889e-3);
  EXPECT_JSON_REL(j["algbw"], 257.14285714285714e9);
  EXPECT_JSON_REL(j["busbw"], 450e9);
}

TEST(RooflineCli, MeasuredFallsBackToTheDatasheet) {
  // The database has no measured ceilings yet: --measured gives the datasheet figures, flagged.
  nlohmann::json d = roofline_json("gemm --gpu h100-sxm");
  nlohmann::json m = roofline_json("gemm --gpu h100-sxm --measured");
  EXPECT_EQ(m["measured"], true);
  EXPECT_EQ(d["measured"], false);
  EXPECT_EQ(m["ridge"], d["ridge"]);
}

TEST(RooflineCli, TextOutputNamesTheBound) {
  Result r = kernelab("roofline softmax --rows 4096 --cols 4096 --gpu h100-sxm");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("t_lower_bound"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("memory"), std::string::npos) << r.out;
}

TEST(ExplainCli, AttentionShowsBothSchedules) {
  // Flash 134217728 bytes, compute-bound; naive 8724152320 bytes, memory-bound; ratio 65.
  Result r = kernelab("explain attention --batch 1 --heads 16 --seq-q 8192 --seq-kv 8192 --head-dim 128 --gpu h100-sxm");
  ASSERT_EQ(r.code, 0) << r.err;
  std::string flash_line, naive_line;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("flash  bytes") != std::string::npos) flash_line = line;
    if (line.find("naive  bytes") != std::string::npos) naive_line = line;
  }
  EXPECT_NE(flash_line.find("1.342e+08"), std::string::npos) << r.out;
  EXPECT_NE(flash_line.find("compute-bound"), std::string::npos) << r.out;
  EXPECT_NE(naive_line.find("8.724e+09"), std::string::npos) << r.out;
  EXPECT_NE(naive_line.find("memory-bound"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("65x the bytes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("not FLOPs"), std::string::npos) << r.out;
}

TEST(ExplainCli, DecodeSaysWhyMemoryBound) {
  Result r = kernelab("explain attention --heads 32 --kv-heads 8 --seq-q 1 --seq-kv 8192 --gpu h200");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("2*H*Sq/(Hkv*e) = 4 FLOP/B"), std::string::npos) << r.out;
}

TEST(ExplainCli, WeightOnlyGemmStatesWhereItPays) {
  // n=k=4096 bf16 on h100-sxm: m* = 345.1 (test_model.cpp, GemmQuant.ComputeBoundM).
  Result r = kernelab("explain gemm --m 16 --n 4096 --k 4096 --weight-bits 4 --group-size 128 --gpu h100-sxm");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("= 345.1 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Here m = 16: it pays"), std::string::npos) << r.out;
  // 4096 x 4096 weights once (16 rows per block row), 15/8 instructions each, at 128 x 132 x 1.98e9 per second.
  EXPECT_NE(r.out.find("1.678e+07 weights, 3.146e+07 instructions"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("at least 940.3 ns of issue time"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("memory-bound, so it hides under the loads"), std::string::npos) << r.out;
  // The decode GEMV at m 16: 128 blocks of 32 columns (4096 / 64 = 64 < 132 SMs: not 64-column
  // blocks), each reading 16 x 4096 x 2 bytes of A: 1.678e7 bytes, 1.939x the 8.651e6 of int4
  // weights and scales. At n 14336 the blocks take 64 columns (224 >= 132): 0.97x.
  EXPECT_NE(r.out.find("128 blocks of 32 columns (132 SMs), each reading all of A (m*k*e = 1.311e+05 bytes) from L2: "
                       "1.678e+07 bytes, 1.939x"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("the L2, not DRAM, may set the time"), std::string::npos) << r.out;
  Result wide = kernelab("explain gemm --m 16 --n 14336 --k 4096 --weight-bits 4 --group-size 128 --gpu h100-sxm");
  ASSERT_EQ(wide.code, 0) << wide.err;
  EXPECT_NE(wide.out.find("224 blocks of 64 columns"), std::string::npos) << wide.out;
  EXPECT_NE(wide.out.find("0.9697x"), std::string::npos) << wide.out;
  EXPECT_EQ(kernelab("explain gemm --m 17 --n 4096 --k 4096 --weight-bits 4 --gpu h100-sxm").out.find("decode gemv"), std::string::npos);
}

TEST(ExplainCli, ResultsFileAndJson) {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("kernelab-roofline-test-" + std::to_string(getpid()) + ".json");
  const double t = 137438953472.0 / 989.4e12;  // the lower bound of gemm 4096^3 bf16 on h100-sxm
  std::ofstream(file) << nlohmann::json{{"points",
                                         {{{"op", "gemm"}, {"variant", "v1"}, {"dtype", "bf16"}, {"median_s", 4 * t},
                                           {"flops", 137438953472.0}, {"bytes", 100663296.0}, {"device", "H100"}}}}}
                             .dump();
  Result r = kernelab("explain gemm --m 4096 --n 4096 --k 4096 --gpu h100-sxm --json --results '" + file.string() + "'");
  std::filesystem::remove(file);
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  expect_design_keys(j);
  EXPECT_NE(j.at("explanation").get<std::string>().find("25.0% of the bound"), std::string::npos) << r.out;
  EXPECT_EQ(kernelab("explain gemm --gpu h100-sxm --results /no/such/file.json").code, 2);
}

// explain --rung: the cp.async rung's tiles at 4096^3 bf16 on an H100 SXM, each figure from the
// formulas it prints (the occupancy needs the nvcc build's static facts).
TEST(ExplainCli, GemmRungModel) {
  Result r = kernelab("explain gemm --m 4096 --n 4096 --k 4096 --gpu h100-sxm --rung cuda_cp_async --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_JSON_REL(j.at("intensity_global_to_shared"), 2.0 * 128 * 128 / (256 * 2));  // 64 FLOP/B
  EXPECT_JSON_REL(j.at("intensity_shared_to_registers"), 2.0 * 64 * 32 / (96 * 2));
  EXPECT_JSON_REL(j.at("intensity_mma"), 2.0 * 16 * 8 * 16 / ((16 * 16 + 16 * 8) * 2));
  EXPECT_JSON_REL(j.at("stage_bytes"), 256.0 * 32 * 2);
  EXPECT_JSON_REL(j.at("bytes_l2_to_shared"), 2.0 * (4096.0 * 4096 * 32 * 2));  // A and B each once per block column/row
  EXPECT_JSON_REL(j.at("bytes_shared_to_registers"), 2.0 * 4096 * 4096 * 4096 * (1.0 / 32 + 1.0 / 64));
  EXPECT_JSON_REL(j.at("t_shared_s"), j.at("bytes_shared_to_registers").get<double>() / (132 * 128 * 1980e6));
  EXPECT_EQ(j.at("limiter"), "shared memory") << "a 64x32 warp tile reads 3 KiB of shared memory per 64 KiFLOP";
  const double demand = 989.4e12 / 132 / 64;  // bytes/s per SM at peak
  EXPECT_JSON_REL(j.at("littles_law").at(1).at("bytes_in_flight"), demand * 600e-9);
  EXPECT_EQ(j.at("tiling").at("stages"), 4);
  EXPECT_TRUE(j.at("modelled").get<bool>());
  if (!j.at("occupancy").is_null()) {
    EXPECT_EQ(j.at("occupancy").at("active_blocks_per_sm"), 2) << "launch bounds cap registers at 128";
    EXPECT_EQ(j.at("littles_law").at(1).at("stages"), 4);  // 68.6 KiB in flight / (16 KiB x 2 blocks) -> 3, + 1
  }
  r = kernelab("explain gemm --m 512 --n 512 --k 512 --gpu a100-sxm-80gb --dtype fp32 --rung cuda_naive");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("tiles        none"), std::string::npos) << r.out;
  for (const std::string bad : {"--rung cublas", "--rung cuda_nope", "--rung cuda_cp_async --dtype fp32",
                                "--config 64x64", "--rung cuda_wmma --config nope"}) {
    r = kernelab("explain gemm --gpu h100-sxm " + bad);
    EXPECT_EQ(r.code, 2) << bad << "\n" << r.out;
    EXPECT_FALSE(r.err.empty()) << bad;
  }
  EXPECT_EQ(kernelab("explain softmax --gpu h100-sxm --rung cuda_online").code, 2);
}

TEST(RooflineCli, BadInputExitsTwo) {
  for (const std::string args : {"gemm --gpu no-such-gpu", "attention --heads 32 --kv-heads 5 --gpu h100-sxm",
                                 "gemm --m 0 --gpu h100-sxm", "attention --seq-kv 0 --gpu h100-sxm",
                                 "frobnicate --gpu h100-sxm", "gemm --dtype fp7 --gpu h100-sxm", "gemm --m 4096",
                                 "softmax --heads 4 --gpu h100-sxm", "allreduce --ranks 1 --gpu h100-sxm"}) {
    for (const std::string cmd : {"roofline ", "explain "}) {
      Result r = kernelab(cmd + args);
      EXPECT_EQ(r.code, 2) << cmd << args << "\n" << r.out << r.err;
      EXPECT_FALSE(r.err.empty()) << cmd << args;
    }
  }
}

}  // namespace
