// The `fused` op: an expression of `kernelab fuse`'s language as a registered op, its CPU
// interpreter and its two generated CUDA schedules (the simulator's runs; the GPU's need one)
// walked by check, bench and sweep like any rung; bad expressions refused with their column.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "bad_input.h"
#include "cli_util.h"
#include "kernelab/device.h"
#include "kernelab/harness.h"
#include "kernelab/op.h"
#include "ops/fused/fused.h"

namespace {

using kl::DType;
using ::testing::HasSubstr;

const kl::Op& fused() { return kl::find_op("fused"); }

kl::Problem problem(const std::string& expr, const std::string& vectors, int64_t rows, int64_t cols, DType t = DType::f32) {
  std::map<std::string, std::string> opts = {{"expr", expr}};
  if (!vectors.empty()) opts["vector"] = vectors;
  return kl::make_problem(fused(), t, {{"rows", rows}, {"cols", cols}}, opts);
}

TEST(FusedOp, TensorsFollowTheExpression) {
  const kl::Problem p = problem("s = rowsum(x * g); y = x * g - s", "g", 5, 9);
  const auto in = fused().inputs(p), out = fused().outputs(p);
  ASSERT_EQ(in.size(), 2u);
  EXPECT_EQ(in[0].name, "x");
  EXPECT_EQ(in[0].shape, (kl::Shape{5, 9}));
  EXPECT_EQ(in[1].name, "g");
  EXPECT_EQ(in[1].shape, (kl::Shape{9}));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].name, "y");
  // Bytes: x (45) and g (9) read once, y (45) written once, fp32; FLOPs: x*g, rowsum over it, the subtraction.
  const kl::Cost c = fused().cost(p);
  EXPECT_EQ(c.bytes, (45 + 9 + 45) * 4.0);
  EXPECT_EQ(c.flops, 45.0 * 3);
}

TEST(FusedOp, NamedExpressionsBringTheirRowVectors) {
  const kl::Problem p = problem("layernorm", "", 3, 7, DType::bf16);
  const auto in = fused().inputs(p);
  ASSERT_EQ(in.size(), 3u);
  EXPECT_EQ(in[1].shape, (kl::Shape{7}));  // g
  EXPECT_EQ(in[2].shape, (kl::Shape{7}));  // b
  EXPECT_THAT(kl::test::bad_input_message([] { problem("layernorm", "g", 3, 7); }), HasSubstr("drop --vector"));
}

TEST(FusedOp, MalformedExpressionsAreRefusedWithTheirColumn) {
  EXPECT_THAT(kl::test::bad_input_message([] { problem("y = exp(x + 1", "", 3, 7); }), HasSubstr("column"));
  EXPECT_THAT(kl::test::bad_input_message([] { problem("y = x + 1", "g", 3, 7); }), HasSubstr("g"));
  EXPECT_THAT(kl::test::bad_input_message([] { problem("y = x", "", int64_t{1} << 31, 1); }), HasSubstr("2^31"));
}

// Every rung on a free expression with a per-row output, in the simulator where it is built.
TEST(FusedOp, EveryRungPassesAnExpressionWrittenHere) {
  const kl::Problem p = problem("s = rowmax(a * c) - rowmean(b); y = tanh(a - s / 7) * max(c, b); t = s * 2", "c", 33, 70, DType::f16);
  kl::DeviceSet devs = kl::open_devices({kl::Backend::cpu, kl::Backend::sim});
  const kl::Prepared prep = kl::prepare(fused(), p, 11);
  int ran = 0;
  for (const kl::Variant& v : fused().variants)
    for (kl::Device* d : {kl::find_device(devs, kl::Backend::cpu), kl::find_device(devs, kl::Backend::sim)}) {
      if (!d || !v.runs_on(d->backend())) continue;
      const kl::CheckResult r = kl::check_variant(fused(), v, v.configs.front(), prep, *d);
      EXPECT_TRUE(r.passed) << v.name << " on " << kl::backend_name(d->backend()) << ": " << r.failure << " err " << r.max_rel_err;
      ++ran;
    }
  EXPECT_GE(ran, 1);
}

// The check can fail: each rung run on the inputs of one expression and judged by another's reference.
TEST(FusedOp, ARungComputingAnotherExpressionFailsItsCheck) {
  const kl::Problem right = problem("y = silu(a) * b", "", 7, 33), wrong = problem("y = sigmoid(a) * b", "", 7, 33);
  kl::DeviceSet devs = kl::open_devices({kl::Backend::cpu, kl::Backend::sim});
  const kl::Prepared prep = kl::prepare(fused(), right, 3);
  kl::Prepared planted = kl::prepare(fused(), wrong, 3);
  planted.host_in = prep.host_in;  // the same inputs; the reference stays silu(a) * b
  planted.ref = prep.ref;
  for (const kl::Variant& v : fused().variants)
    for (kl::Device* d : {kl::find_device(devs, kl::Backend::cpu), kl::find_device(devs, kl::Backend::sim)}) {
      if (!d || !v.runs_on(d->backend())) continue;
      EXPECT_TRUE(kl::check_variant(fused(), v, v.configs.front(), prep, *d).passed) << v.name;
      EXPECT_FALSE(kl::check_variant(fused(), v, v.configs.front(), planted, *d).passed) << v.name;
    }
}

TEST(FusedOp, CheckBenchAndSweepWalkItFromTheCommandLine) {
  const kl::test::CliResult check = kl::test::run_kernelab("check fused --backend cpu --expr 'y = gelu(x + b)' --vector b --rows 9 --cols 40");
  EXPECT_EQ(check.code, 0) << check.out << check.err;
  EXPECT_THAT(check.out, HasSubstr("cpu_interpreted"));
  const kl::test::CliResult bench = kl::test::run_kernelab("bench fused --backend cpu --expr swiglu --rows 64 --cols 256 --max-seconds 0.05 --json");
  EXPECT_EQ(bench.code, 0) << bench.err;
  EXPECT_THAT(bench.out, HasSubstr("\"variant\": \"cpu_interpreted\""));
  const kl::test::CliResult sweep =
      kl::test::run_kernelab("sweep fused --backend cpu --expr rmsnorm_residual --axis cols=64,256 --rows 16 --max-seconds 0.05");
  EXPECT_EQ(sweep.code, 0) << sweep.err;
  const kl::test::CliResult bad = kl::test::run_kernelab("check fused --backend cpu --expr 'y = exp(x'");
  EXPECT_EQ(bad.code, 2);
  EXPECT_THAT(bad.err, HasSubstr("column"));
}

// `sim profile fused`: the generated programs' profiling builds, counted into kernelab's profile:
// the unfused chain writes and reads back every intermediate, the fused kernel reads each input once.
TEST(FusedOp, TheSimulatorProfilerCountsBothSchedules) {
  const kl::test::CliResult r =
      kl::test::run_kernelab("sim profile fused --expr rmsnorm_residual --dtype bf16 --rows 64 --cols 1024 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json p = nlohmann::json::parse(r.out);
  std::map<std::string, nlohmann::json> rungs;
  for (const nlohmann::json& x : p.at("rungs")) rungs[x.at("variant")] = x;
  ASSERT_EQ(rungs.count("cuda_fused"), 1u) << r.out;
  ASSERT_EQ(rungs.count("cuda_unfused"), 1u) << r.out;
  for (const auto& [name, x] : rungs) {
    EXPECT_TRUE(x.at("checked").get<bool>()) << name;
    EXPECT_FALSE(x.at("kernels").empty()) << name;
  }
  EXPECT_NEAR(rungs["cuda_fused"].at("model_dram_over_min").get<double>(), 1.0, 0.01);
  EXPECT_GT(rungs["cuda_unfused"].at("model_dram_over_min").get<double>(), 1.5);
  EXPECT_GT(rungs["cuda_unfused"].at("kernels").size(), rungs["cuda_fused"].at("kernels").size());
  // bf16 rows staged in fp32 for the second pass, 8 floats a lane: swizzled, no bank conflict (2-way before).
  for (const nlohmann::json& k : rungs["cuda_fused"].at("kernels")) {
    const nlohmann::json& m = k.at("metrics");
    EXPECT_GT(m.at("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum").get<double>(), 0) << "the rows are staged";
    EXPECT_EQ(m.at("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum").get<double>(), 0);
    EXPECT_EQ(m.at("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum").get<double>(), 0);
  }
}

}  // namespace
