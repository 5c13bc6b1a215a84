// gemm_fp8 (FP8 e4m3 with tensor or DeepSeek-V3 block scales): the reference and the promoted fp32
// baseline against hand-computed numbers, the validation messages (k not a multiple of 128 with block
// scaling; through the CLI's exit code 2), the drawn inputs (e4m3 codes, a scale per 1x128 of A and
// per 128x128 of W), the cost, planted wrong rungs (one scale block for all of k; the tensor scales
// forgotten) that the check must catch, and `kernelab check gemm_fp8` passing.
// Tolerance (the op's): 4 units of the dtype's roundoff (bf16 2^-8, fp16 2^-11) plus twice the error
// of dtype_baseline (exact e4m3 products summed in fp32, promoted per 128-k block), over the whole of D.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "bad_input.h"
#include "cli_util.h"
#include "kernelab/device.h"
#include "kernelab/error.h"
#include "kernelab/harness.h"
#include "kernelab/op.h"
#include "ops/cpu_math.h"
#include "ops/cpu_variant.h"
#include "ops/gemm_fp8/gemm_fp8.h"
#include "zero_inputs.h"

namespace {

using kl::DType;
using kl::Fp8Params;
using kl::Op;
using kl::Problem;
using kl::Tensor;
using kl::test::bad_input_message;
using ::testing::HasSubstr;

const Op& op() { return kl::find_op("gemm_fp8"); }

std::vector<Tensor> zero_inputs(const Problem& p) { return kl::test::zero_inputs(op(), p); }

// 1 x 1 x 256, block scaling (two k blocks): A = 1.5 at k 0 and 2 at k 128, W = 3 at k 0 and -0.5 at
// k 128; sa = (0.25, 4), sw = (2, 0.125). By hand: 0.25*2 * 1.5*3 + 4*0.125 * 2*(-0.5) = 2.25 - 0.5 = 1.75.
TEST(GemmFp8Reference, HandComputedPerBlock) {
  for (DType t : {DType::bf16, DType::f16}) {
    const Problem p = kl::make_problem(op(), t, {{"m", 1}, {"n", 1}, {"k", 256}}, {{"scaling", "block"}});
    std::vector<Tensor> in = zero_inputs(p);
    ASSERT_EQ(in[Fp8Params::kSa].numel(), 2);
    ASSERT_EQ(in[Fp8Params::kSw].numel(), 2);
    in[Fp8Params::kA].set(0, 1.5), in[Fp8Params::kA].set(128, 2);
    in[Fp8Params::kW].set(0, 3), in[Fp8Params::kW].set(128, -0.5);
    in[Fp8Params::kSa].set(0, 0.25), in[Fp8Params::kSa].set(1, 4);
    in[Fp8Params::kSw].set(0, 2), in[Fp8Params::kSw].set(1, 0.125);
    EXPECT_EQ(op().reference(p, in)[0], std::vector<double>{1.75});
    EXPECT_EQ(op().dtype_baseline(p, in)[0], std::vector<double>{1.75}) << "every value here is exact";
  }
}

// Tensor scaling: one scale each. 1 x 2 x 16: A = (1, -2, 0...), W rows (4, 1, ...) and (0.5, 0.5, ...),
// sa = 0.5, sw = 3: D = 1.5 * (4 - 2) = 3 and 1.5 * (0.5 - 1) = -0.75.
TEST(GemmFp8Reference, HandComputedPerTensor) {
  const Problem p = kl::make_problem(op(), DType::bf16, {{"m", 1}, {"n", 2}, {"k", 16}}, {{"scaling", "tensor"}});
  std::vector<Tensor> in = zero_inputs(p);
  in[Fp8Params::kA].set(0, 1), in[Fp8Params::kA].set(1, -2);
  in[Fp8Params::kW].set(0, 4), in[Fp8Params::kW].set(1, 1), in[Fp8Params::kW].set(16, 0.5), in[Fp8Params::kW].set(17, 0.5);
  in[Fp8Params::kSa].set(0, 0.5), in[Fp8Params::kSw].set(0, 3);
  EXPECT_EQ(op().reference(p, in)[0], (std::vector<double>{3, -0.75}));
  EXPECT_EQ(op().dtype_baseline(p, in)[0], (std::vector<double>{3, -0.75}));
}

TEST(GemmFp8Validation, NamesTheBadValueAndWhy) {
  const std::string k = bad_input_message([] { kl::make_problem(op(), DType::bf16, {{"n", 64}, {"k", 10944}}, {{"scaling", "block"}}); });
  EXPECT_THAT(k, HasSubstr("k=10944"));
  EXPECT_THAT(k, HasSubstr("multiple of 128"));
  EXPECT_THAT(k, HasSubstr("--scaling tensor"));
  EXPECT_NO_THROW(kl::make_problem(op(), DType::bf16, {{"n", 64}, {"k", 10944}}, {{"scaling", "tensor"}}));
  EXPECT_THAT(bad_input_message([] { kl::make_problem(op(), DType::bf16, {{"k", 7400}}, {{"scaling", "tensor"}}); }),
              HasSubstr("k=7400 is not a positive multiple of 16"));
  EXPECT_THAT(bad_input_message([] { kl::make_problem(op(), DType::f32, {}); }), HasSubstr("fp32"));
  EXPECT_THAT(bad_input_message([] { kl::make_problem(op(), DType::bf16, {}, {{"scaling", "group"}}); }), HasSubstr("group"));
}

TEST(GemmFp8Validation, CliExitsTwo) {
  const kl::test::CliResult r = kl::test::run_kernelab("check gemm_fp8 --m 4 --n 64 --k 7392 --scaling block --backend cpu");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("k=7392"));
}

// 2 x 200 x 256 with block scales: A's 2 x 2, W's 2 x 2 (200 rows are two 128-row blocks); fp16 D.
TEST(GemmFp8Cost, OneByteOperandsAndTheirScales) {
  const kl::Cost b = op().cost(kl::make_problem(op(), DType::f16, {{"m", 2}, {"n", 200}, {"k", 256}}, {{"scaling", "block"}}));
  EXPECT_DOUBLE_EQ(b.flops, 2.0 * 2 * 200 * 256);
  EXPECT_DOUBLE_EQ(b.bytes, 2 * 256 + 200 * 256 + 4 * (4 + 4) + 2 * 200 * 2.0);
  const kl::Cost t = op().cost(kl::make_problem(op(), DType::f16, {{"m", 2}, {"n", 200}, {"k", 256}}, {{"scaling", "tensor"}}));
  EXPECT_DOUBLE_EQ(t.bytes, 2 * 256 + 200 * 256 + 4 * 2 + 2 * 200 * 2.0);
}

// A scale per block, fitted to it: the block's largest code is e4m3's 448 (the scale is amax / 448).
TEST(GemmFp8Inputs, EachScaleBlockReachesTheLargestCode) {
  const Problem p = kl::make_problem(op(), DType::bf16, {{"m", 3}, {"n", 200}, {"k", 256}}, {{"scaling", "block"}});
  const kl::Prepared prep = kl::prepare(op(), p, 5);
  const std::vector<double> a = kl::to_doubles(prep.host_in[Fp8Params::kA]), w = kl::to_doubles(prep.host_in[Fp8Params::kW]);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t b = 0; b < 2; ++b) {
      double amax = 0;
      for (int64_t l = 128 * b; l < 128 * (b + 1); ++l) amax = std::max(amax, std::abs(a[size_t(i * 256 + l)]));
      EXPECT_EQ(amax, 448) << "A row " << i << " block " << b;
    }
  for (int64_t nb = 0; nb < 2; ++nb)
    for (int64_t b = 0; b < 2; ++b) {
      double amax = 0;
      for (int64_t j = 128 * nb; j < std::min<int64_t>(200, 128 * (nb + 1)); ++j)
        for (int64_t l = 128 * b; l < 128 * (b + 1); ++l) amax = std::max(amax, std::abs(w[size_t(j * 256 + l)]));
      EXPECT_EQ(amax, 448) << "W block " << nb << ", " << b;
    }
  const std::vector<double> sw = kl::to_doubles(prep.host_in[Fp8Params::kSw]);
  EXPECT_EQ(std::set<double>(sw.begin(), sw.end()).size(), sw.size()) << "four blocks, four scales";
}

// Planted bugs: every k block scaled by its first block's scales; the tensor scales never applied.
template <bool kFirstBlockOnly> void planted(const Fp8Params& a, const kl::Args& args) {
  kl::cpu::with_float_type(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    const auto* x = args.in[a.kA].as<uint8_t>();
    const auto* w = args.in[a.kW].as<uint8_t>();
    const float* sa = args.in[a.kSa].as<float>();
    const float* sw = args.in[a.kSw].as<float>();
    T* d = args.out[0].as<T>();
    for (int64_t i = 0; i < a.m; ++i)
      for (int64_t j = 0; j < a.n; ++j) {
        float acc = 0;
        for (int64_t l = 0; l < a.k; ++l) acc += kl::e4m3_to_float(x[i * a.k + l]) * kl::e4m3_to_float(w[j * a.k + l]);
        d[i * a.n + j] = kl::cpu::from_float<T>(kFirstBlockOnly ? acc * sa[a.a_scale_at(i, 0)] * sw[a.w_scale_at(j, 0)] : acc);
      }
  });
}

TEST(GemmFp8Check, PlantedScaleBugsFail) {
  kl::DeviceSet set = kl::open_devices({kl::Backend::cpu});
  kl::Device* cpu = kl::find_device(set, kl::Backend::cpu);
  ASSERT_NE(cpu, nullptr);
  const kl::Variant first = kl::cpu_variant("gemm_fp8", "first_block_scales_only", "planted bug", planted<true>);
  const kl::Variant none = kl::cpu_variant("gemm_fp8", "no_tensor_scales", "planted bug", planted<false>);
  const Problem block = kl::make_problem(op(), DType::bf16, {{"m", 7}, {"n", 48}, {"k", 384}}, {{"scaling", "block"}});
  const Problem tensor = kl::make_problem(op(), DType::bf16, {{"m", 7}, {"n", 48}, {"k", 160}}, {{"scaling", "tensor"}});
  for (const auto& [bad, p] : std::vector<std::pair<const kl::Variant*, const Problem*>>{{&first, &block}, {&none, &tensor}}) {
    const kl::CheckResult r = kl::check_variant(op(), *bad, bad->configs.front(), kl::prepare(op(), *p, 3), *cpu);
    EXPECT_FALSE(r.passed) << bad->name << ": max_rel_err " << r.max_rel_err;
    EXPECT_GT(r.max_rel_err, 10 * r.tolerance) << bad->name;
  }
}

TEST(GemmFp8Check, CliCheckPassesEveryCase) {
  const kl::test::CliResult r = kl::test::run_kernelab("check gemm_fp8 --backend cpu");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("all variants passed"));
  EXPECT_THAT(r.out, HasSubstr("cpu_promoted"));
}

#ifdef KERNELAB_HAVE_SIM_OPS
// cuda_mma_fp8 at 256^3 with block scales in the simulator: one m16n8k32 e4m3 per 2*16*8*32 FLOPs,
// A and W copied to shared memory by two blocks each but read from DRAM about once, with their
// scales (A: 256 x 2, W: 2 x 2 floats).
TEST(GemmFp8Profile, MmaFp8CountsItsTensorInstructionsAndReadsTheOperandsOnce) {
  const kl::test::CliResult r = kl::test::run_kernelab(
      "sim profile gemm_fp8 --dtype bf16 --m 256 --n 256 --k 256 --scaling block --variant cuda_mma_fp8 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["rungs"].size(), 1u) << r.out;
  const nlohmann::json& rung = j["rungs"][0];
  EXPECT_TRUE(rung["checked"].get<bool>()) << rung["check_failure"];
  auto sum = [&](const std::string& metric) {
    double s = 0;
    for (const nlohmann::json& k : rung["kernels"]) s += k["metrics"].value(metric, -1.0);
    return s;
  };
  const double flops = 2.0 * 256 * 256 * 256, operands = 2.0 * 256 * 256;
  EXPECT_EQ(sum("sim__inst_executed_mma_fp8.sum"), flops / (2 * 16 * 8 * 32));
  EXPECT_EQ(sum("sim__tensor_flops.sum"), flops);
  EXPECT_EQ(sum("sim__ldgsts_bytes.sum"), 2 * operands) << "two blocks per operand tile";
  EXPECT_EQ(sum("sim__ldsm_bank_conflicts.sum"), 0);
  EXPECT_NEAR(sum("model__dram_bytes_read.sum"), operands + 4 * (256 * 2 + 2 * 2), 0.05 * operands);
}

// The cuBLASLt peer with block scales (VEC128_32F for A, BLK128x128_32F for W) through the
// simulator's cuBLASLt, which reads the scale layouts PyTorch passes cuBLASLt (A's m fastest, W's rows
// padded to 4 floats: k / 128 = 3 here) and takes a row-major D, so the peer's first formulation runs
// (a GPU's check is the test of both against NVIDIA's library).
TEST(GemmFp8Peer, BlockScalesThroughTheSimulatorsCublasLt) {
  const kl::test::CliResult r = kl::test::run_kernelab("check gemm_fp8 --backend sim --variant cublaslt_fp8 --m 7 --n 48 --k 384 --scaling block");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("all variants passed"));
  EXPECT_THAT(r.out, HasSubstr("cublaslt_fp8  heuristic  sim"));
  EXPECT_THAT(r.err, HasSubstr("cublaslt_fp8: block scales as F1 "));
}

// cuda_tma_wgmma_fp8 at 256^3 in the simulator, both scalings: one wgmma m64n128k32 e4m3 per
// 2*64*128*32 FLOPs, counted per warp (4 per warpgroup instruction), its FLOPs those of k32
// instructions; A and W arrive by TMA only, a 128 x 128 box of each per block and 128-deep k slice
// (2 x 2 blocks, 2 slices), each operand read by two blocks but from DRAM about once.
TEST(GemmFp8Profile, TmaWgmmaFp8CountsK32InstructionsAndMovesTheOperandsByTma) {
  for (const char* scaling : {"block", "tensor"}) {
    const kl::test::CliResult r = kl::test::run_kernelab(std::string("sim profile gemm_fp8 --dtype bf16 --m 256 --n 256 --k 256 --scaling ") +
                                                         scaling + " --variant cuda_tma_wgmma_fp8 --json");
    ASSERT_EQ(r.code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    ASSERT_EQ(j["rungs"].size(), 1u) << r.out;
    const nlohmann::json& rung = j["rungs"][0];
    EXPECT_TRUE(rung["checked"].get<bool>()) << scaling << ": " << rung["check_failure"];
    auto sum = [&](const std::string& metric) {
      double s = 0;
      for (const nlohmann::json& k : rung["kernels"]) s += k["metrics"].value(metric, -1.0);
      return s;
    };
    const double flops = 2.0 * 256 * 256 * 256, operands = 2.0 * 256 * 256;
    const double scales = std::string(scaling) == "block" ? 256 * 2 + 2 * 2 : 2;
    EXPECT_EQ(sum("sm__inst_executed_pipe_tensor_op_gmma.sum"), 4 * flops / (2 * 64 * 128 * 32)) << scaling;
    EXPECT_EQ(sum("sim__tensor_flops.sum"), flops) << scaling;
    EXPECT_EQ(sum("sim__inst_executed_mma_fp8.sum"), 0) << scaling << ": no mma.sync";
    EXPECT_EQ(sum("sim__tma_ld_requests.sum"), 2 * 2 * 2 * 2) << scaling;
    EXPECT_EQ(sum("sim__tma_ld_bytes.sum"), 2 * operands) << scaling << ": two blocks per operand tile";
    EXPECT_EQ(sum("sim__ldgsts_bytes.sum"), 0) << scaling;
    EXPECT_NEAR(sum("model__dram_bytes_read.sum"), operands + 4 * scales, 0.05 * operands) << scaling;
  }
}
#endif

}  // namespace
