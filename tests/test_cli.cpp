// The kernelab CLI as a user runs it: exit codes (0 ok, 1 runtime failure or failed check,
// 2 bad input), messages that name the bad value, and the JSON the scripts read.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <omp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli_util.h"
#include "kernelab/probe.h"

namespace fs = std::filesystem;

namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

using Result = kl::test::CliResult;
using kl::test::slurp;

// Host ceilings stored at path for this CPU, thread count and the given level of the CPU rungs,
// written by the library's own serializer: what load_or_probe_host accepts without probing.
void store_ceilings(const fs::path& path, const kl::HostIsa& isa) {
  kl::HostCeilings h;
  h.cpu = kl::host_cpu_name();
  h.isa = isa;
  h.threads = omp_get_max_threads();
  h.triad_bytes_per_s = 10e9;
  h.triad_array_bytes = 512.0 * (1 << 20);
  h.fma_flops_1t = 50e9;
  h.fma_flops_all = 100e9;
  h.measured_at = "2000-01-01T00:00:00Z (test fixture)";
  h.path = path.string();
  std::ofstream(h.path) << kl::host_ceilings_json(h).dump(2) << "\n";
}

// The scratch folder, with stored host ceilings, so no run probes the machine (and none writes
// to the user's cache).
const fs::path& temp_dir() {
  static const fs::path dir = [] {
    const fs::path d = kl::test::scratch_dir();
    store_ceilings(d / "host-ceilings.json", kl::host_isa());
    setenv("KERNELAB_PROBE_FILE", (d / "host-ceilings.json").c_str(), 1);
    return d;
  }();
  return dir;
}

Result run(const std::string& args) {
  temp_dir();
  return kl::test::run_kernelab(args);
}

nlohmann::json parse_json(const Result& r) {
  try {
    return nlohmann::json::parse(r.out);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "stdout is not JSON (" << e.what() << "):\n" << r.out << "\nstderr:\n" << r.err;
    return nlohmann::json::object();
  }
}

TEST(Cli, ListJsonHasEveryOpAndVariant) {
  Result r = run("list --json");
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = parse_json(r);
  ASSERT_TRUE(j.contains("ops"));
  std::vector<std::string> names;
  for (const auto& op : j["ops"]) {
    names.push_back(op.at("op"));
    EXPECT_FALSE(op.at("summary").get<std::string>().empty());
    EXPECT_FALSE(op.at("counting").get<std::string>().empty());
    EXPECT_FALSE(op.at("dims").empty());
    const nlohmann::json dtypes = op.at("experiment").get<bool>() ? nlohmann::json{"fp32"}
                                  : op.at("op") == "gemm_w4a16" || op.at("op") == "gemm_w8a8" || op.at("op") == "gemm_fp8"
                                      ? nlohmann::json{"fp16", "bf16"}  // quantized GEMMs: fp16/bf16 activations or D by definition
                                                                   : nlohmann::json{"fp32", "fp16", "bf16"};
    EXPECT_EQ(op.at("dtypes"), dtypes);
    ASSERT_FALSE(op.at("variants").empty()) << op.at("op");
    for (const auto& v : op["variants"]) {
      EXPECT_FALSE(v.at("name").get<std::string>().empty());
      EXPECT_TRUE(v.at("backend") == "cpu" || v.at("backend") == "cuda" || v.at("backend") == "sim");
      EXPECT_TRUE(v.at("peer").is_boolean());
      EXPECT_FALSE(v.at("note").get<std::string>().empty());
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"gemm", "gemm_w4a16", "gemm_w8a8", "gemm_fp8", "attention", "attention_bwd", "decode", "softmax", "layernorm", "rmsnorm", "transpose", "reduce", "bias_gelu",
                                             "fused", "exp_stride", "exp_occupancy", "exp_smem_banks", "exp_divergence", "exp_launch",
                                             "exp_cache_bandwidth", "exp_cache_latency"}));

  std::map<std::string, bool> gemm;  // variant -> peer
  for (const auto& v : j["ops"][0]["variants"]) gemm[v["name"]] = v["peer"];
  ASSERT_TRUE(gemm.count("openblas"));
  EXPECT_TRUE(gemm["openblas"]);
  ASSERT_TRUE(gemm.count("cpu_naive"));
  EXPECT_FALSE(gemm["cpu_naive"]);
  ASSERT_TRUE(gemm.count("cpu_tiled"));
  EXPECT_FALSE(gemm["cpu_tiled"]);
}

TEST(Cli, ListTextMarksThePeer) {
  Result r = run("list");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("openblas"));
  EXPECT_THAT(r.out, HasSubstr("[peer]"));
  EXPECT_THAT(r.out, HasSubstr("transpose"));
}

// Bad input: exit 2 and a message on stderr that names the bad value.
struct BadCase {
  std::string name, args, needle;
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << "kernelab " << c.args; }

class CliBadInput : public ::testing::TestWithParam<BadCase> {};

TEST_P(CliBadInput, ExitsTwoNamingTheBadValue) {
  const BadCase& c = GetParam();
  Result r = run(c.args);
  EXPECT_EQ(r.code, 2) << "kernelab " << c.args << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err;
  EXPECT_THAT(r.err, HasSubstr(c.needle)) << "kernelab " << c.args;
  EXPECT_THAT(r.err, Not(HasSubstr("timing"))) << "bad input must be refused before anything is timed";
}

const std::string kFast = " --backend cpu --max-seconds 0.05";

INSTANTIATE_TEST_SUITE_P(
    Cli, CliBadInput,
    ::testing::Values(
        BadCase{"UnknownOp", "bench nosuchop" + kFast, "nosuchop"},
        BadCase{"UnknownOpInCheck", "check softmax nosuchop --backend cpu", "nosuchop"},
        BadCase{"UnknownVariant", "bench gemm --m 8 --n 8 --k 8 --variant cpu_nosuch" + kFast, "cpu_nosuch"},
        BadCase{"UnknownBackend", "bench gemm --m 8 --n 8 --k 8 --backend tpu", "tpu"},
        BadCase{"UnknownBackendInCheck", "check transpose --backend tpu", "tpu"},
        BadCase{"UnknownDtype", "bench gemm --m 8 --n 8 --k 8 --dtype fp99" + kFast, "fp99"},
        BadCase{"DtypeTheOpDoesNotTake", "bench softmax --rows 8 --cols 8 --dtype int8" + kFast, "int8"},
        BadCase{"ZeroDim", "bench gemm --m 0 --n 8 --k 8" + kFast, "m=0"},
        BadCase{"NegativeDim", "bench gemm --m -3 --n 8 --k 8" + kFast, "m=-3"},
        BadCase{"NonNumericDim", "bench softmax --rows abc --cols 8" + kFast, "abc"},
        BadCase{"NonNumericOption", "bench softmax --rows 8 --cols 8 --scale xyz" + kFast, "xyz"},
        BadCase{"EmptyNumericOption", "bench gemm --m 8 --n 8 --k 8 --alpha ''" + kFast, "alpha"},
        BadCase{"BadChoice", "bench gemm --m 8 --n 8 --k 8 --a-layout diagonal" + kFast, "diagonal"},
        BadCase{"ShapeOptionTheOpLacks", "bench softmax --m 5" + kFast, "--m"},
        BadCase{"OptionTheOpLacks", "bench transpose --rows 4 --cols 4 --causal 1" + kFast, "--causal"},
        BadCase{"ImpossiblyLargeShape", "bench gemm --m 1073741824 --n 1073741824 --k 1073741824" + kFast, "1073741824"},
        BadCase{"AxisWithoutValues", "sweep softmax --axis rows" + kFast, "rows"},
        BadCase{"AxisWithoutName", "sweep softmax --axis =1,2" + kFast, "=1,2"},
        BadCase{"AxisTheOpLacks", "sweep softmax --axis m=1,2" + kFast, "'m'"},
        // The good value comes first: nothing may be timed before the bad one is refused.
        BadCase{"AxisValueNotAnInteger", "sweep softmax --cols 8 --axis rows=4,x7" + kFast, "x7"},
        BadCase{"AxisValueZero", "sweep softmax --cols 8 --axis rows=4,0" + kFast, "rows=0"},
        BadCase{"AxisChoiceNotAllowed", "sweep softmax --rows 4 --cols 8 --axis causal=0,2" + kFast, "'2'"},
        BadCase{"AgainstItself", "sweep gemm_w4a16 --n 16 --k 128 --axis m=1,2 --against gemm_w4a16" + kFast, "the op swept itself"},
        BadCase{"AgainstUnknownOp", "sweep gemm_w4a16 --n 16 --k 128 --axis m=1,2 --against gemv" + kFast, "gemv"},
        BadCase{"MissingOp", "bench --backend cpu", "op"},
        BadCase{"MissingAxis", "sweep softmax" + kFast, "--axis"},
        BadCase{"MissingSubcommand", "", "subcommand"},
        BadCase{"UnknownFlag", "bench softmax --no-such-flag 3" + kFast, "--no-such-flag"}),
    [](const ::testing::TestParamInfo<BadCase>& info) { return info.param.name; });

// KERNELAB_CPU_ISA picks the build the CPU rungs run; the CPU device names it in every point,
// and a level unknown (or one this CPU cannot run) is refused with exit 2 before any work.
TEST(Cli, CpuIsaChosenByTheEnvironment) {
  kl::HostIsa generic = kl::host_isa();
  generic.used = "generic";
  const fs::path ceilings = temp_dir() / "generic-ceilings.json";
  store_ceilings(ceilings, generic);
  Result r = kl::test::run_kernelab("bench reduce --backend cpu --rows 64 --cols 4096 --dtype f32 --json --max-seconds 0.05",
                                    "KERNELAB_CPU_ISA=generic KERNELAB_PROBE_FILE='" + ceilings.string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("generic rungs on an"));
  Result bad = kl::test::run_kernelab("list", "KERNELAB_CPU_ISA=avx10");
  EXPECT_EQ(bad.code, 2);
  EXPECT_THAT(bad.err, HasSubstr("unknown CPU instruction-set level 'avx10' (choices: generic, avx2, avx512)"));
}

TEST(Cli, CheckTransposeAndReducePasses) {
  Result r = run("check transpose reduce --backend cpu");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("all variants passed"));
  EXPECT_THAT(r.out, HasSubstr("transpose"));
  EXPECT_THAT(r.out, HasSubstr("reduce"));
  EXPECT_THAT(r.out, Not(HasSubstr("gemm")));
}

TEST(Cli, CheckJsonReportsEveryVariantAndDtype) {
  Result r = run("check transpose --backend cpu --json --seed 7");
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = parse_json(r);
  EXPECT_EQ(j.at("passed"), true);
  std::set<std::string> seen;
  for (const auto& row : j.at("results")) {
    EXPECT_EQ(row.at("op"), "transpose");
    EXPECT_EQ(row.at("failed"), 0);
    EXPECT_GT(row.at("passed").get<int>(), 0);
    EXPECT_EQ(row.at("max_rel_err"), 0.0);  // a transpose is exact
    seen.insert(row.at("variant").get<std::string>() + "/" + row.at("dtype").get<std::string>());
  }
  EXPECT_EQ(seen, (std::set<std::string>{"cpu_naive/fp32", "cpu_naive/fp16", "cpu_naive/bf16", "cpu_tiled/fp32",
                                         "cpu_tiled/fp16", "cpu_tiled/bf16"}));
}

void expect_point_keys(const nlohmann::json& pt) {
  for (const char* key : {"op", "variant", "backend", "dtype", "median_s", "tflops", "gbps", "pct_of_bound", "max_rel_err",
                          "device", "commit", "runs", "flops", "bytes", "peer"})
    EXPECT_TRUE(pt.contains(key)) << "point lacks " << key << ": " << pt.dump();
  EXPECT_GT(pt.at("median_s").get<double>(), 0);
  EXPECT_GE(pt.at("runs").get<int>(), 1);
  EXPECT_GT(pt.at("gbps").get<double>(), 0);
  EXPECT_GT(pt.at("pct_of_bound").get<double>(), 0);
  EXPECT_GE(pt.at("max_rel_err").get<double>(), 0);
  EXPECT_FALSE(pt.at("device").get<std::string>().empty());
  EXPECT_FALSE(pt.at("commit").get<std::string>().empty());
  EXPECT_EQ(pt.at("backend"), "cpu");
}

TEST(Cli, BenchTransposeJson) {
  Result r = run("bench transpose --rows 7 --cols 33 --backend cpu --max-seconds 0.05 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = parse_json(r);
  ASSERT_TRUE(j.contains("points"));
  std::set<std::string> variants;
  for (const auto& pt : j["points"]) {
    expect_point_keys(pt);
    EXPECT_EQ(pt.at("op"), "transpose");
    EXPECT_EQ(pt.at("dtype"), "fp32");
    EXPECT_EQ(pt.at("tflops").get<double>(), 0);  // no arithmetic
    EXPECT_EQ(pt.at("max_rel_err").get<double>(), 0);
    EXPECT_DOUBLE_EQ(pt.at("bytes").get<double>(), 2.0 * 7 * 33 * 4);
    variants.insert(pt.at("variant"));
  }
  EXPECT_EQ(variants, (std::set<std::string>{"cpu_naive", "cpu_tiled"}));
}

TEST(Cli, BenchGemmJsonIncludesThePeer) {
  Result r = run("bench gemm --m 64 --n 48 --k 33 --dtype fp32 --backend cpu --max-seconds 0.05 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = parse_json(r);
  std::map<std::string, bool> variants;  // name -> peer
  for (const auto& pt : j.at("points")) {
    expect_point_keys(pt);
    EXPECT_GT(pt.at("tflops").get<double>(), 0);
    EXPECT_DOUBLE_EQ(pt.at("flops").get<double>(), 2.0 * 64 * 48 * 33);
    EXPECT_LE(pt.at("max_rel_err").get<double>(), 1e-5);
    variants[pt.at("variant")] = pt.at("peer");
  }
  ASSERT_EQ(variants.size(), 3u) << j.dump(2);
  EXPECT_FALSE(variants.at("cpu_naive"));
  EXPECT_FALSE(variants.at("cpu_tiled"));
  EXPECT_TRUE(variants.at("openblas"));
}

TEST(Cli, BenchTextShowsTheLadder) {
  Result r = run("bench gemm --m 16 --n 16 --k 16 --backend cpu --max-seconds 0.05");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* s : {"cpu_naive", "cpu_tiled", "openblas (peer)", "vs below", "vs peer", "median"})
    EXPECT_THAT(r.out, HasSubstr(s));
  // "of bound" names the ceilings it divides by and where they were measured.
  EXPECT_THAT(r.out, ContainsRegex("of bound: against [0-9.]+ TFLOP/s and [0-9.]+ GB/s \\(kernelab probe .*STREAM-style triad"));
}

TEST(Cli, BenchOneVariantTheDtypeRulesOut) {
  // Asking for the fp32-only peer on bf16 is bad input, with the variant's reason.
  Result r = run("bench gemm --m 8 --n 8 --k 8 --dtype bf16 --variant openblas" + kFast);
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("openblas"));
  EXPECT_THAT(r.err, HasSubstr("fp32"));
}

TEST(Cli, ReportOnAnAbsentBackendSaysWhy) {
  // A GPU-less machine: the report restricted to cuda refuses at once, naming the backend.
  Result r = run("report --backend cuda --out /nonexistent-kernelab-report");
  if (r.code == 0) GTEST_SKIP() << "a GPU is present";
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("backend cuda"));
  EXPECT_EQ(run("report --backend tpu").code, 2);
}

TEST(Cli, SweepJson) {
  Result r = run("sweep reduce --rows 5 --axis cols=7,33 --backend cpu --max-seconds 0.05 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = parse_json(r);
  EXPECT_EQ(j.at("axis"), "cols");
  ASSERT_EQ(j.at("points").size(), 4u);  // two values x two variants
  std::set<std::string> labels;
  for (const auto& pt : j["points"]) {
    expect_point_keys(pt);
    labels.insert(pt.at("label"));
  }
  EXPECT_EQ(labels.size(), 2u);
  EXPECT_TRUE(j.at("crossovers").is_array());
  for (const auto& c : j["crossovers"]) {
    EXPECT_EQ(c.at("axis"), "cols");
    EXPECT_LT(c.at("speedup").get<double>(), 1.0);
  }
}

// --against: the other op timed at each value; per rung its speedups in axis order and where it flips.
TEST(Cli, SweepAgainstAnotherOpGivesEachRungsSpeedupsAndCrossover) {
  Result r = run("sweep gemm_w4a16 --n 64 --k 128 --axis m=1,8 --against gemm --backend cpu --max-seconds 0.05 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json a = parse_json(r).at("against");
  EXPECT_EQ(a.at("op"), "gemm");
  ASSERT_EQ(a.at("points").size(), 2u) << "gemm's fastest cpu variant at m 1 and m 8";
  // OpenBLAS, gemm's peer, takes fp32 only: at fp16 the baseline is gemm's fastest own rung.
  for (const auto& p : a["points"]) {
    EXPECT_GT(p.at("median_s").get<double>(), 0.0);
    EXPECT_NE(p.at("variant"), "openblas");
  }
  ASSERT_EQ(a.at("crossovers").size(), 2u) << "cpu_dequant_gemm and cpu_packed";
  for (const auto& c : a["crossovers"]) {
    ASSERT_EQ(c.at("speedups").size(), 2u);
    EXPECT_EQ(c["speedups"][0].at("value"), "1");
    const bool first = c["speedups"][0].at("speedup").get<double>() >= 1, second = c["speedups"][1].at("speedup").get<double>() >= 1;
    if (first == second) EXPECT_TRUE(c.at("crossover").is_null()) << c.dump();
    else EXPECT_EQ(c.at("crossover"), "8") << c.dump();
    EXPECT_THAT(c.at("story").get<std::string>(), HasSubstr(first == second ? "at every m swept" : "from m=8"));
  }
}

}  // namespace

// The Hopper rungs on a simulated GPU of 2 SMs: 9 output tiles, so the persistent rung's blocks
// loop over several tiles and its producer runs the stage ring on across tile boundaries.
TEST(Cli, HopperRungsOnMoreTilesThanSms) {
  setenv("KERNELAB_SIM_DEVICE", "sms=2", 1);
  const Result r = run("check gemm --backend sim --variant cuda_tma_wgmma cuda_warp_specialized --m 300 --n 264 --k 520 "
                       "--b-layout col --dtype bf16 --alpha 0.5 --beta -1.5");
  unsetenv("KERNELAB_SIM_DEVICE");
  if (r.out.find("sim") == std::string::npos) GTEST_SKIP() << "no simulator backend in this build";
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("all variants passed"));
}

// Without a GPU, bench names the CUDA rows it could not run, and the rungs that would not take
// the problem anyway with their reason (bf16 gemm: the fp32 rungs and the SGEMM peers; fp32 gemm:
// the tensor-core rungs and cuBLASLt).
TEST(Cli, BenchNamesTheRowsAnAbsentBackendWouldHaveHad) {
  Result r = run("bench gemm --m 8 --n 8 --k 8 --dtype bf16 --max-seconds 0.05");
  ASSERT_EQ(r.code, 0) << r.err;
  if (r.out.find("not run: cuda:") == std::string::npos) GTEST_SKIP() << "a GPU is present: the cuda rows ran";
  EXPECT_THAT(r.out, HasSubstr("cuda_naive, cuda_coalesced, cuda_smem, cuda_1d_blocktile, cuda_2d_blocktile, "
                               "cuda_vectorized, cuda_warptile would not run it either: an fp32 CUDA-core rung"));
  EXPECT_THAT(r.out, HasSubstr("rows not run: cuda_wmma, cuda_mma_ldmatrix, cuda_cp_async, cuda_split_k, cublaslt (peer)\n"));
  EXPECT_THAT(r.out, HasSubstr("cuda_tma_wgmma, cuda_warp_specialized would not run it either: A row-major and B column-major only"));
  EXPECT_THAT(r.out, HasSubstr("cublas (peer), cublas_tf32 (peer) would not run it either: cuBLAS SGEMM takes fp32 only"));
  r = run("bench gemm --m 8 --n 8 --k 8 --dtype fp32 --max-seconds 0.05");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("  rows not run: cuda_naive, cuda_coalesced, "));
  EXPECT_THAT(r.out, HasSubstr("cuda_warptile, cublas (peer), cublas_tf32 (peer)\n"));
  EXPECT_THAT(r.out, HasSubstr("cuda_wmma, cuda_mma_ldmatrix, cuda_cp_async, cuda_tma_wgmma, cuda_warp_specialized, "
                               "cuda_split_k, cuda_unfused_epilogue, cublaslt (peer) would not run it either: a tensor-core rung"));
}

// The cuDNN SDPA peers, where the build found cudnn-frontend: listed as the peers of attention and
// attention_bwd, and on a machine without a GPU named among the rows bench could not run (fp32: among
// those that would not run it anyway, with cuDNN's reason), the command succeeding on the CPU rows.
TEST(Cli, ListAndBenchNameTheCudnnPeers) {
#ifndef KERNELAB_HAVE_CUDNN_RUNGS
  GTEST_SKIP() << "this build found no cudnn-frontend: the cuDNN peers are left out";
#else
  Result r = run("list");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("cudnn_sdpa       cuda  [peer] cuDNN's SDPA forward"));
  EXPECT_THAT(r.out, HasSubstr("cudnn_sdpa_bwd   cuda  [peer] cuDNN's SDPA backward"));
  const std::string shape = " --batch 1 --seq-q 33 --seq-kv 65 --heads 2 --kv-heads 1 --head-dim 64 --causal 1 --max-seconds 0.05";
  for (const char* op : {"attention", "attention_bwd"}) {
    const std::string peer = std::string(op) == "attention" ? "cudnn_sdpa (peer)" : "cudnn_sdpa_bwd (peer)";
    r = run(std::string("bench ") + op + shape + " --dtype bf16");
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    if (r.out.find("not run: cuda:") == std::string::npos) GTEST_SKIP() << "a GPU is present: the cuda rows ran";
    EXPECT_THAT(r.out, HasSubstr("  rows not run: ")) << r.out;
    EXPECT_THAT(r.out, HasSubstr(peer + "\n")) << r.out;
    r = run(std::string("bench ") + op + shape + " --dtype fp32");
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_THAT(r.out, HasSubstr(peer + " would not run it either: cuDNN SDPA: fp16 and bf16 only")) << r.out;
  }
#endif
}
