// `kernelab fuse`: the parser and the float64 reference checked by hand-written loops, then the
// CLI as a user runs it: the issue's five chains on every shape and dtype of the matrix (each
// test one expression: one simulator compile serves its 24 runs), an expression it has never
// seen, the NVRTC compile with its cache, the fallback, and malformed expressions (exit 2,
// naming the column).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "cli_util.h"
#include "jit/codegen.h"
#include "jit/expr.h"
#include "jit/fuse.h"
#include "jit/gpu_launch.h"
#include "kernelab/error.h"

namespace fs = std::filesystem;
using kl::test::CliResult;
using kl::test::run_kernelab;

namespace {

const char* kSoftmax =
    "m = rowmax(where(col <= row, x * 0.125, -1e30)); e = exp(where(col <= row, x * 0.125, -1e30) - m); y = e / rowsum(e)";
const char* kLayernorm = "mu = rowmean(x); d = x - mu; y = d * rsqrt(rowmean(d * d) + 1e-5) * g + b";
const char* kRmsnorm = "h = x + r; y = h * rsqrt(rowmean(h * h) + 1e-6) * g";
const char* kBiasGelu = "y = gelu(x + b)";
const char* kSwiglu = "y = silu(a) * b";

// The simulator's build cache in the build tree (as the sim run tests keep it), so a rerun reuses
// the compiled programs; NVRTC's cache in this process's scratch folder unless a test says.
std::string env(const std::string& extra = "") {
  static const std::string build = fs::path(KERNELAB_BINARY).parent_path().string();
  return "KERNELAB_SIM_CACHE='" + build + "/sim-cache' KERNELAB_JIT_CACHE='" + (kl::test::scratch_dir() / "jit").string() + "' " + extra;
}

CliResult fuse(const std::string& expr, const std::string& args, const std::string& extra_env = "") {
  return run_kernelab("fuse '" + expr + "' " + args, env(extra_env));
}

nlohmann::json parse_json(const CliResult& r) {
  try {
    return nlohmann::json::parse(r.out);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not JSON: " << e.what() << "\nstdout: " << r.out << "\nstderr: " << r.err;
    return nlohmann::json::object();
  }
}

double tolerance_of(const std::string& dtype) { return dtype == "fp32" ? 1e-5 : dtype == "fp16" ? 2e-3 : 2e-2; }

// The matrix of the issue: rows {1, 127} x cols {1, 7, 33, 1000} x {fp32, fp16, bf16}, each run
// checked against float64 in the simulator; the fused kernel ran (no fallback) and passed, the
// unfused chain's error is reported and within the tolerance too.
void matrix(const std::string& expr, const std::string& args) {
  for (const std::string dtype : {"fp32", "fp16", "bf16"})
    for (int rows : {1, 127})
      for (int cols : {1, 7, 33, 1000}) {
        SCOPED_TRACE(dtype + " " + std::to_string(rows) + "x" + std::to_string(cols));
        const CliResult r = fuse(expr, args + " --json --dtype " + dtype + " --rows " + std::to_string(rows) + " --cols " + std::to_string(cols));
        ASSERT_EQ(r.code, 0) << r.err;
        const nlohmann::json j = parse_json(r);
        EXPECT_EQ(j["schedule"], "fused");
        EXPECT_TRUE(j["fallback"].is_null());
        EXPECT_EQ(j["passed"], true);
        EXPECT_EQ(j["tolerance"].get<double>(), tolerance_of(dtype));
        EXPECT_EQ(j["outputs"], nlohmann::json::array({"y"}));
        ASSERT_TRUE(j["max_rel_err"]["y"].is_number()) << r.out;
        ASSERT_TRUE(j["max_rel_err_unfused"]["y"].is_number()) << r.out;
        EXPECT_LE(j["max_rel_err"]["y"].get<double>(), tolerance_of(dtype));
        EXPECT_LE(j["max_rel_err_unfused"]["y"].get<double>(), tolerance_of(dtype));
        EXPECT_LT(j["bytes_fused"].get<int64_t>(), j["bytes_unfused"].get<int64_t>());
        EXPECT_TRUE(j["compile_s_cold"].is_null());
      }
}

}  // namespace

// ---- the language and the reference, in process ----

TEST(FuseExpr, KindsLevelsInputsAndOutputs) {
  const kl::jit::Program p = kl::jit::parse(kRmsnorm, {"g"});
  ASSERT_EQ(p.inputs.size(), 3u);
  EXPECT_EQ(p.inputs[0].name, "x");
  EXPECT_EQ(p.inputs[1].name, "r");
  EXPECT_EQ(p.inputs[2].name, "g");
  EXPECT_EQ(p.inputs[2].kind, kl::jit::Kind::col);
  ASSERT_EQ(p.outputs.size(), 1u) << "h is used later, so only y is an output";
  EXPECT_EQ(p.outputs[0].name, "y");
  EXPECT_EQ(p.levels, 1);
  const kl::jit::Program s = kl::jit::parse(kSoftmax, {});
  EXPECT_EQ(s.levels, 1) << "rowsum(exp(a - rowmax(a))) is taken in rowmax's pass (online softmax)";
  int folded = 0;
  for (const auto& n : s.nodes)
    if (n.online_max >= 0) {
      ++folded;
      EXPECT_EQ(n.op, kl::jit::OpCode::rowsum);
      EXPECT_EQ(s.nodes[size_t(n.online_max)].op, kl::jit::OpCode::rowmax);
    }
  EXPECT_EQ(folded, 1);
  EXPECT_EQ(kl::jit::parse("m = rowmax(x); y = rowsum(exp(x * 2 - m))", {}).levels, 2) << "another argument: not folded";
  EXPECT_EQ(kl::jit::parse("m = rowmax(x); y = exp(x - m) / rowsum(exp(x - m)) + rowmean(x * m)", {}).levels, 2)
      << "folded, but the mean of x * m still needs m first";
  int wheres = 0;
  for (const auto& n : s.nodes) wheres += n.op == kl::jit::OpCode::where;
  EXPECT_EQ(wheres, 1) << "the masked scores written twice are one node";
  const kl::jit::Program two = kl::jit::parse("s = rowsum(x); y = x - s; z = s * 2", {});
  ASSERT_EQ(two.outputs.size(), 2u);
  EXPECT_EQ(two.outputs[1].kind, kl::jit::Kind::row);
}

// The unfused chain's workspace on a GPU: each step that no output holds, rounded up to 256 bytes;
// a step an output holds takes none.
TEST(FuseExpr, UnfusedWorkspaceHoldsEachIntermediateOnce) {
  using kl::jit::FuseDType;
  const auto bytes = [](const char* text, FuseDType t, int64_t rows, int64_t cols) {
    return kl::jit::unfused_workspace_bytes(kl::jit::parse(text, {}), t, rows, cols);
  };
  EXPECT_EQ(bytes("y = x * 2", FuseDType::fp32, 3, 5), 0u);
  EXPECT_EQ(bytes("y = exp(x) * 2", FuseDType::fp32, 3, 5), 256u) << "exp(x): 60 bytes";
  EXPECT_EQ(bytes("y = exp(x) * 2", FuseDType::bf16, 1000, 1000), 2000128u) << "2,000,000 bytes, rounded up";
  EXPECT_EQ(bytes("y = exp(x) * 2 + exp(x)", FuseDType::fp32, 3, 5), 512u) << "exp(x), then exp(x) * 2";
  EXPECT_EQ(bytes("s = rowsum(x); y = x - s; z = s * 2", FuseDType::fp32, 300, 7), 1280u) << "s: a row of 300 floats";
  EXPECT_EQ(bytes("h = x + 1; y = h; z = h", FuseDType::fp16, 64, 64), 8192u) << "h; y and z are copy steps of it";
}

// evaluate() against softmax and layernorm written out by hand on the generated inputs.
TEST(FuseExpr, ReferenceMatchesHandWrittenLoops) {
  kl::jit::FuseRequest q;
  q.rows = 5, q.cols = 37, q.seed = 7, q.dtype = kl::jit::FuseDType::bf16;
  const kl::jit::Program sm = kl::jit::parse(kSoftmax, {});
  const auto in = kl::jit::fuse_inputs(sm, q);
  for (double v : in[0]) {
    ASSERT_GE(std::fabs(v), 1.0 / 64) << "never zero";
    ASSERT_LE(std::fabs(v), 2.0);
  }
  const auto y = kl::jit::evaluate(sm, in, q.rows, q.cols)[0];
  for (int r = 0; r < q.rows; ++r) {
    double m = -INFINITY, sum = 0;
    for (int c = 0; c <= std::min(r, int(q.cols) - 1); ++c) m = std::max(m, in[0][size_t(r * q.cols + c)] * 0.125);
    for (int c = 0; c <= std::min(r, int(q.cols) - 1); ++c) sum += std::exp(in[0][size_t(r * q.cols + c)] * 0.125 - m);
    for (int c = 0; c < q.cols; ++c) {
      const double want = c <= r ? std::exp(in[0][size_t(r * q.cols + c)] * 0.125 - m) / sum : 0.0;
      ASSERT_NEAR(y[size_t(r * q.cols + c)], want, 1e-14) << r << "," << c;
    }
  }
  const kl::jit::Program ln = kl::jit::parse(kLayernorm, {"g", "b"});
  const auto li = kl::jit::fuse_inputs(ln, q);  // x, g, b
  ASSERT_EQ(li[1].size(), size_t(q.cols));
  const auto ly = kl::jit::evaluate(ln, li, q.rows, q.cols)[0];
  for (int r = 0; r < q.rows; ++r) {
    double mu = 0, var = 0;
    for (int c = 0; c < q.cols; ++c) mu += li[0][size_t(r * q.cols + c)] / double(q.cols);
    for (int c = 0; c < q.cols; ++c) var += std::pow(li[0][size_t(r * q.cols + c)] - mu, 2) / double(q.cols);
    for (int c = 0; c < q.cols; ++c) {
      const double want = (li[0][size_t(r * q.cols + c)] - mu) / std::sqrt(var + 1e-5) * li[1][size_t(c)] + li[2][size_t(c)];
      ASSERT_NEAR(ly[size_t(r * q.cols + c)], want, 1e-12);
    }
  }
  // log/sqrt/rsqrt of an input directly: that input is drawn positive.
  const kl::jit::Program lg = kl::jit::parse("y = log(p) + q", {});
  const auto pi = kl::jit::fuse_inputs(lg, q);
  for (double v : pi[0]) ASSERT_GE(v, 0.5);
  bool negative = false;
  for (double v : pi[1]) negative |= v < 0;
  EXPECT_TRUE(negative) << "the other inputs span [-2, 2]";
}

TEST(FuseExpr, BytesModel) {
  // silu(a) * b on 2x3 fp16: unfused = silu (read a, write t) + mul (read t and b, write y).
  const kl::jit::Program p = kl::jit::parse(kSwiglu, {});
  EXPECT_EQ(kl::jit::bytes_unfused(p, 2, 3, 2), (6 + 6 + 6 + 6 + 6) * 2);
  EXPECT_EQ(kl::jit::bytes_fused(p, 2, 3, 2), (6 + 6 + 6) * 2);
  // A row vector counts cols elements; a reduction writes one per row.
  const kl::jit::Program q = kl::jit::parse("s = rowsum(x * g)", {"g"});
  EXPECT_EQ(kl::jit::bytes_fused(q, 4, 10, 4), (40 + 10 + 4) * 4);
  EXPECT_EQ(kl::jit::bytes_unfused(q, 4, 10, 4), (40 + 10 + 40 + 40 + 4) * 4);
}

// The generated fused kernel has no per-statement kernels and reads a staged input from shared
// memory in its later passes.
TEST(FuseExpr, FusedSourceIsOneKernelWithStagedRow) {
  const kl::jit::Program p = kl::jit::parse(kSoftmax, {});
  const std::string f = kl::jit::fused_source(p, kl::jit::FuseDType::fp16);
  EXPECT_EQ(std::count(f.begin(), f.end(), '\n') > 10, true);
  size_t globals = 0;
  for (size_t at = 0; (at = f.find("__global__", at)) != std::string::npos; ++at) ++globals;
  EXPECT_EQ(globals, 1u);
  EXPECT_NE(f.find("typedef __half T;"), std::string::npos);
  EXPECT_NE(f.find("stage[0 * cols + c]"), std::string::npos);
  EXPECT_EQ(kl::jit::fused_stage_floats(p), 1);
  const std::string u = kl::jit::unfused_source(p, kl::jit::FuseDType::fp16);
  size_t steps = 0;
  for (size_t at = 0; (at = u.find("__global__", at)) != std::string::npos; ++at) ++steps;
  EXPECT_EQ(steps, 8u);
}

// ---- the CLI: the issue's matrix ----

TEST(FuseCli, SoftmaxScaledCausalAllShapesAndDtypes) { matrix(kSoftmax, ""); }
TEST(FuseCli, LayernormAllShapesAndDtypes) { matrix(kLayernorm, "--vector g,b"); }
TEST(FuseCli, RmsnormWithResidualAllShapesAndDtypes) { matrix(kRmsnorm, "--vector g"); }
TEST(FuseCli, BiasGeluAllShapesAndDtypes) { matrix(kBiasGelu, "--vector b"); }
TEST(FuseCli, SwigluAllShapesAndDtypes) { matrix(kSwiglu, ""); }

// A chain nobody wrote a kernel for: a reduction, three inputs, two outputs (one per row).
TEST(FuseCli, ExpressionNeverSeenBefore) {
  const std::string expr = "s = rowmax(a * c) - rowmean(b); y = tanh(a - s / 7) * max(c, b) + where(a > b, c, -c); t = s * 2";
  for (const std::string dtype : {"fp32", "bf16"}) {
    const CliResult r = fuse(expr, "--json --rows 19 --cols 45 --seed 3 --dtype " + dtype);
    ASSERT_EQ(r.code, 0) << r.err;
    const nlohmann::json j = parse_json(r);
    EXPECT_EQ(j["outputs"], nlohmann::json::array({"y", "t"}));
    EXPECT_EQ(j["inputs"].size(), 3u);
    EXPECT_EQ(j["passed"], true);
    EXPECT_LE(j["max_rel_err"]["y"].get<double>(), tolerance_of(dtype));
    EXPECT_LE(j["max_rel_err"]["t"].get<double>(), tolerance_of(dtype));
  }
  // The readable table names both outputs.
  const CliResult t = fuse(expr, "--rows 3 --cols 7");
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("outputs y 3x7, t 3 (one per row)"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("passed"), std::string::npos);
}

// ---- NVRTC, its cache and the fallback ----

TEST(FuseCli, NvrtcEmitColdWarmAndNoLocalMemory) {
  const fs::path cache = kl::test::scratch_dir() / "jit-emit";
  fs::remove_all(cache);
  const std::string e = "KERNELAB_JIT_CACHE='" + cache.string() + "'";
  const CliResult r = run_kernelab(std::string("fuse '") + kRmsnorm + "' --vector g --rows 7 --cols 33 --arch sm_90a --emit", env() + e);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("__global__ void kl_fused("), std::string::npos) << "--emit prints the fused source";
  EXPECT_NE(r.out.find("__global__ void kl_step"), std::string::npos) << "--emit prints the unfused chain";
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(sm_90a: compile cold ([0-9.]+) s, warm ([0-9.]+) s \(cache miss\), PTX ([0-9]+) bytes, no local memory)")))
      << r.out;
  const double cold = std::stod(m[1]), warm = std::stod(m[2]);
  EXPECT_GT(cold, 0);
  EXPECT_LT(warm * 10, cold) << "a cache read is far cheaper than an NVRTC compile";
  // The PTX itself, as stored: an entry, no local memory.
  int ptx_files = 0;
  for (const auto& f : fs::directory_iterator(cache)) {
    if (f.path().extension() != ".ptx") continue;
    ++ptx_files;
    const std::string ptx = kl::test::slurp(f.path());
    EXPECT_NE(ptx.find(".entry"), std::string::npos);
    EXPECT_NE(ptx.find(".target sm_90a"), std::string::npos);
    EXPECT_EQ(ptx.find(".local"), std::string::npos);
  }
  EXPECT_EQ(ptx_files, 1);
  // Again: served from the cache, same key.
  const CliResult again = run_kernelab(std::string("fuse '") + kRmsnorm + "' --vector g --rows 7 --cols 33 --arch sm_90a --json", env() + e);
  ASSERT_EQ(again.code, 0) << again.err;
  const nlohmann::json j = parse_json(again);
  EXPECT_EQ(j["nvrtc_cache"], "hit");
  EXPECT_EQ(j["schedule"], "fused");
  EXPECT_EQ(j["ptx_local_memory"], false);
  EXPECT_GT(j["ptx_bytes"].get<int64_t>(), 1000);
  // The 16-byte path: x and r, each read by ld.global.nc.v4 in the first pass (g in the second), y stored by st.global.v4.
  EXPECT_GE(j["ptx_vector_loads"].get<int>(), 3);
  EXPECT_GE(j["ptx_vector_stores"].get<int>(), 1);
  EXPECT_LT(j["compile_s_warm"].get<double>() * 10, j["compile_s_cold"].get<double>());
}

// The 16-bit dtypes through NVRTC too (cuda_fp16.h / cuda_bf16.h conversions), for sm_80.
// A named expression brings its text and row vectors; --compile-only is NVRTC alone (what the
// device check times), and needs --arch.
TEST(FuseCli, NamedExpressionsAndCompileOnly) {
  const CliResult r = fuse("layernorm", "--compile-only --arch sm_80 --json --dtype bf16");
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = parse_json(r);
  EXPECT_EQ(j["expr"], kLayernorm);
  EXPECT_EQ(j["passed"], true);
  EXPECT_EQ(j["max_rel_err"], nlohmann::json::object());  // nothing ran
  EXPECT_GE(j["ptx_vector_loads"].get<int>(), 1);
  ASSERT_EQ(j["inputs"].size(), 3u);
  EXPECT_EQ(j["inputs"][1]["kind"], "col");  // g, a row vector
  const CliResult both = fuse("layernorm", "--vector g --compile-only --arch sm_80");
  EXPECT_EQ(both.code, 2);
  EXPECT_NE(both.err.find("drop --vector"), std::string::npos) << both.err;
  const CliResult no_arch = fuse(kSwiglu, "--compile-only");
  EXPECT_EQ(no_arch.code, 2);
  EXPECT_NE(no_arch.err.find("--compile-only needs --arch"), std::string::npos) << no_arch.err;
}

// The simulator profiler's counts over each schedule (fp32 RMSNorm with a residual, 127 x 1000):
// the fused kernel requests x and r once, g once per row (each row's block reads it; the L2 serves
// all but the first) and y once, and behind the modelled L2 moves exactly the cost model's bytes;
// the chain's 7 launches move twice as much DRAM even with every intermediate in the L2.
TEST(FuseCli, ProfileCountsWhatEachScheduleMoves) {
  const CliResult r = fuse(kRmsnorm, "--vector g --rows 127 --cols 1000 --profile --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = parse_json(r);
  const int64_t fused = j["bytes_fused"], rows = 127, cols = 1000;
  EXPECT_EQ(j["requested_bytes_fused"].get<int64_t>(), fused + (rows - 1) * cols * 4);
  EXPECT_EQ(j["dram_bytes_fused"].get<int64_t>(), fused);
  EXPECT_EQ(j["launches_unfused"], 7);
  EXPECT_GT(j["requested_bytes_unfused"].get<int64_t>(), j["bytes_unfused"].get<int64_t>());  // a row value re-read per element
  EXPECT_GT(j["dram_bytes_unfused"].get<int64_t>(), 19 * fused / 10);
  EXPECT_GT(j["profile_l2_bytes"].get<int64_t>(), 40 << 20);
}

TEST(FuseCli, NvrtcCompilesHalfAndBfloat16) {
  for (const std::string dtype : {"fp16", "bf16"}) {
    const CliResult r = fuse(kSoftmax, "--rows 3 --cols 7 --arch sm_80 --json --dtype " + dtype);
    ASSERT_EQ(r.code, 0) << r.err;
    const nlohmann::json j = parse_json(r);
    EXPECT_EQ(j["schedule"], "fused") << j["fallback"];
    EXPECT_EQ(j["ptx_local_memory"], false);
    EXPECT_GT(j["ptx_bytes"].get<int64_t>(), 1000);
    EXPECT_GE(j["ptx_vector_loads"].get<int>(), 1);  // 8 halves in 16 bytes, converted by pairs
    EXPECT_GE(j["ptx_vector_stores"].get<int>(), 1);
  }
}

// Input names that are C++ keywords, CUDA's names, a math function the kernel calls, or a
// name of the generated code itself still compile and compute; outputs that are `col`, `row`,
// or the same value as another output are each a step of the unfused chain and a store of the
// fused kernel. (One expression: one simulator compile.)
TEST(FuseCli, AwkwardNamesIndexOutputsAndCopies) {
  const CliResult r = fuse("t1 = expf * path + c - int; out = rowsum(t1 * threadIdx); y = t1 / out; "
                           "yc = col; z = row; a = exp(path); b = exp(path)",
                           "--rows 4 --cols 9 --dtype bf16 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = parse_json(r);
  EXPECT_EQ(j["inputs"].size(), 5u);
  EXPECT_EQ(j["outputs"], nlohmann::json::array({"y", "yc", "z", "a", "b"}));
  EXPECT_EQ(j["passed"], true);
  EXPECT_EQ(j["max_rel_err"]["yc"], 0.0);
  EXPECT_EQ(j["max_rel_err"]["z"], 0.0);
  EXPECT_EQ(j["max_rel_err"]["a"], j["max_rel_err"]["b"]);
  // t1: 3 products/sums; out: *, rowsum; y: /; yc, z: copies; a: exp; b: copy.
  EXPECT_EQ(j["kernels_unfused"], 3 + 2 + 1 + 2 + 1 + 1);
}

TEST(FuseCli, PlantedJitFailureFallsBackWithACorrectResult) {
  const CliResult r = fuse(kLayernorm, "--vector g,b --rows 127 --cols 33 --dtype fp16 --arch sm_90a --json", "KERNELAB_JIT_FAIL=1");
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = parse_json(r);
  EXPECT_EQ(j["schedule"], "unfused");
  ASSERT_TRUE(j["fallback"].is_string());
  EXPECT_NE(j["fallback"].get<std::string>().find("KERNELAB_JIT_FAIL=1"), std::string::npos);
  EXPECT_EQ(j["passed"], true);
  EXPECT_LE(j["max_rel_err"]["y"].get<double>(), 2e-3);
  EXPECT_EQ(j["max_rel_err"]["y"], j["max_rel_err_unfused"]["y"]) << "the result is the unfused chain's";
  EXPECT_TRUE(j["compile_s_cold"].is_null());
  EXPECT_NE(r.err.find("kernelab fuse: falling back to the unfused chain: KERNELAB_JIT_FAIL=1"), std::string::npos) << r.err;
  // A real NVRTC failure: an arch this NVRTC no longer compiles for.
  const CliResult old = fuse(kSwiglu, "--rows 3 --cols 7 --arch sm_20 --json");
  ASSERT_EQ(old.code, 0) << old.err;
  const nlohmann::json o = parse_json(old);
  EXPECT_EQ(o["schedule"], "unfused");
  ASSERT_TRUE(o["fallback"].is_string());
  EXPECT_NE(o["fallback"].get<std::string>().find("NVRTC"), std::string::npos) << o["fallback"];
  EXPECT_EQ(o["passed"], true);
}

// ---- malformed expressions: exit 2, the column named ----

TEST(FuseCli, MalformedExpressionsNameTheColumn) {
  struct Case {
    std::string expr, message;
    int column;
  };
  const Case cases[] = {
      {"y = foo(x) + 1", "unknown function 'foo'", 5},
      {"y = exp(x + 1", "expected ')' to close exp( at column 5", 14},
      {"y = (x + 1)) * 2", "expected ';' or the end, found ')'", 12},
      {"y = x / s; s = rowsum(x)", "'s' is used before its assignment (column 12)", 9},
      {"x + 1", "no output", 1},
      {"y = 2 * 3", "output 'y' depends on no input", 1},
      {"y = where(x, x, 0)", "where()'s first argument must be a comparison", 11},
      {"y = (x < 1) * x", "a comparison is only allowed as where()'s condition", 13},
      {"y = max(x)", "max() takes 2 arguments, given 1", 5},
      {"y = x $ 2", "an unexpected character '$'", 7},
      {"y = x; y = x * 2", "'y' is assigned twice", 8},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.expr);
    const CliResult r = fuse(c.expr, "--rows 2 --cols 3");
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("at column " + std::to_string(c.column) + "\n"), std::string::npos) << r.err;
  }
  const CliResult nan = fuse("y = log(x - 3)", "--rows 2 --cols 3");
  EXPECT_EQ(nan.code, 2);
  EXPECT_NE(nan.err.find("the float64 evaluation of y gives NaN on the generated inputs"), std::string::npos) << nan.err;
  const CliResult v = fuse(kSwiglu, "--vector q");
  EXPECT_EQ(v.code, 2);
  EXPECT_NE(v.err.find("--vector q names no input"), std::string::npos) << v.err;
}

// The online softmax where a thread's first values are masked to -inf (fp32's rounding of -1e39,
// a literal NVRTC would refuse as written, so it is written by its bits): a running sum never
// becomes exp(-inf - -inf), and threads that saw only -inf add nothing. Two passes, no fallback.
TEST(FuseCli, OnlineSoftmaxSkipsInfiniteMaskedValues) {
  const std::string masked = "m = rowmax(where(col >= 5, x, -1e39)); e = exp(where(col >= 5, x, -1e39) - m); y = e / rowsum(e)";
  for (const std::string shape : {"--rows 3 --cols 40", "--rows 2 --cols 1001"}) {
    const CliResult r = fuse(masked, shape + " --arch sm_90a --json");
    ASSERT_EQ(r.code, 0) << r.err;
    const nlohmann::json j = parse_json(r);
    EXPECT_TRUE(j["fallback"].is_null()) << j["fallback"];
    EXPECT_EQ(j["passes_fused"], 2);
    EXPECT_EQ(j["passed"], true) << shape;
    EXPECT_LE(j["max_rel_err"]["y"].get<double>(), 1e-5) << shape;
  }
}

// A row too long for the shared-memory stage (13000 fp32 columns: 52 KB > 48 KiB): the later
// passes read the input again from global memory, and the result is still right.
TEST(FuseCli, RowLongerThanTheStageIsReadAgain) {
  const CliResult r = fuse(kSoftmax, "--json --rows 2 --cols 13000");
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = parse_json(r);
  EXPECT_EQ(j["schedule"], "fused");
  EXPECT_EQ(j["passed"], true);
  EXPECT_LE(j["max_rel_err"]["y"].get<double>(), 1e-5);
}

// The generated program as `sim run --race-check` runs it (every barrier interval forward, then
// reversed; any difference fails) and under --memcheck: no race, no bad access, both schedules.
// The generated simulator program of the softmax (run once, so that it is in the cache).
fs::path softmax_program() {
  const CliResult r = fuse(kSoftmax, "--rows 3 --cols 7");
  EXPECT_EQ(r.code, 0) << r.err;
  const fs::path dir = fs::path(KERNELAB_BINARY).parent_path() / "sim-cache" / "fuse";
  for (const auto& f : fs::directory_iterator(dir))
    if (f.path().extension() == ".cu" && kl::test::slurp(f.path()).find(std::string("// expression: ") + kSoftmax + "\n") != std::string::npos)
      return f.path();
  ADD_FAILURE() << "no simulator program for the softmax in " << dir;
  return {};
}

TEST(FuseExtra, GeneratedProgramIsRaceFreeAndInBounds) {
  const fs::path program = softmax_program();
  ASSERT_FALSE(program.empty());
  const fs::path in = kl::test::scratch_dir() / "race_in.bin", out = kl::test::scratch_dir() / "race_out.bin";
  {
    std::ofstream f(in, std::ios::binary);
    for (int i = 0; i < 5 * 300; ++i) {
      const float v = float((i * 37 % 101) - 50) / 25.0f + 0.01f;
      f.write(reinterpret_cast<const char*>(&v), 4);
    }
  }
  for (const std::string check : {"--race-check", "--memcheck"})
    for (const std::string schedule : {"fused", "unfused"}) {
      SCOPED_TRACE(check + " " + schedule);
      const CliResult s = run_kernelab("sim run " + check + " '" + program.string() + "' -- fp32 " + schedule + " 5 300 '" + in.string() + "' '" +
                                           out.string() + "'",
                                       env());
      EXPECT_EQ(s.code, 0) << s.out << s.err;
      EXPECT_EQ(fs::file_size(out), 5u * 300 * 4);
    }
}

// The same program is plain CUDA: nvcc compiles it for sm_90a, and ptxas spills nothing in any
// kernel (fused or unfused, every dtype).
TEST(FuseExtra, GeneratedProgramCompilesWithNvcc) {
#ifndef KERNELAB_NVCC
  GTEST_SKIP() << "no nvcc in this build";
#else
  const fs::path program = softmax_program();
  ASSERT_FALSE(program.empty());
  const fs::path log = kl::test::scratch_dir() / "nvcc.log", binary = kl::test::scratch_dir() / "softmax_nvcc";
  const std::string cmd = std::string("'") + KERNELAB_NVCC + "' -std=c++17 -arch=sm_90a -Xptxas -v -o '" + binary.string() + "' '" +
                          program.string() + "' >'" + log.string() + "' 2>&1";
  const int status = std::system(cmd.c_str());
  const std::string out = kl::test::slurp(log);
  ASSERT_EQ(status, 0) << out;
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = 0; (at = out.find(what, at)) != std::string::npos; ++at) ++n;
    return n;
  };
  EXPECT_EQ(count("Compiling entry function"), 3u * 9) << "the fused kernel and 8 unfused steps, for each of 3 dtypes\n" << out;
  EXPECT_GT(count("Function properties for"), 0u);
  EXPECT_EQ(count("0 bytes spill stores, 0 bytes spill loads"), count("Function properties for")) << "a function spills\n" << out;
  EXPECT_EQ(out.find("error"), std::string::npos) << out;
#endif
}

