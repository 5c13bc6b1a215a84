// gemm_w8a8 (W8A8 int8's op contract): the reference and the int8 baseline against hand-computed
// numbers, the validation messages (in the library and through the CLI's exit code 2), the drawn
// inputs (int8 codes and scales from the quantizer, outlier channels in A), the cost, a planted wrong
// rung (the weight scale read by row) that the check must catch, `kernelab check gemm_w8a8` passing,
// and the simulator's counts for cuda_mma_s8 and cuda_tma_wgmma_s8 (tensor instructions, DRAM bytes).
// Tolerance (the op's): 4 units of the dtype's roundoff (fp16 2^-11, bf16 2^-8) plus twice the error
// of dtype_baseline (exact int32 sums, the scales in fp32, D rounded once), over the whole of D.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
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
#include "ops/gemm_w8a8/gemm_w8a8.h"
#include "zero_inputs.h"

namespace {

using kl::DType;
using kl::Op;
using kl::Problem;
using kl::Tensor;
using kl::W8A8Params;
using kl::test::bad_input_message;
using ::testing::HasSubstr;

const Op& op() { return kl::find_op("gemm_w8a8"); }

std::vector<Tensor> zero_inputs(const Problem& p) { return kl::test::zero_inputs(op(), p); }

// 1 x 2 x 16: A = 1 at k 0 and -2 at k 3, sa = 0.5; W row 0 = (3 at k 0, 4 at k 3), row 1 = (-1, 2),
// sw = (0.25, 2). By hand: D0 = 0.5 * 0.25 * (3 - 8) = -0.625, D1 = 0.5 * 2 * (-1 - 4) = -5.
TEST(GemmW8A8Reference, HandComputed) {
  for (DType t : {DType::f16, DType::bf16}) {
    const Problem p = kl::make_problem(op(), t, {{"m", 1}, {"n", 2}, {"k", 16}});
    std::vector<Tensor> in = zero_inputs(p);
    in[W8A8Params::kA].set(0, 1), in[W8A8Params::kA].set(3, -2), in[W8A8Params::kSa].set(0, 0.5);
    in[W8A8Params::kW].set(0, 3), in[W8A8Params::kW].set(3, 4), in[W8A8Params::kW].set(16, -1), in[W8A8Params::kW].set(19, 2);
    in[W8A8Params::kSw].set(0, 0.25), in[W8A8Params::kSw].set(1, 2);
    const auto ref = op().reference(p, in), base = op().dtype_baseline(p, in);
    ASSERT_EQ(ref.size(), 1u);
    EXPECT_EQ(ref[0], (std::vector<double>{-0.625, -5.0}));
    EXPECT_EQ(base[0], ref[0]) << "every value here is exact in the dtype";
  }
}

// The baseline's int32 sum is exact where a float sum is not: 127 * 127 * 1040 = 16,774,160 is below
// 2^24 and so exact in fp32 after the sum, and then rounded once to bf16.
TEST(GemmW8A8Reference, BaselineSumsExactlyThenRoundsOnce) {
  const Problem p = kl::make_problem(op(), DType::bf16, {{"m", 1}, {"n", 1}, {"k", 1040}});
  std::vector<Tensor> in = zero_inputs(p);
  for (int64_t l = 0; l < 1040; ++l) in[W8A8Params::kA].set(l, 127), in[W8A8Params::kW].set(l, 127);
  in[W8A8Params::kSa].set(0, 1), in[W8A8Params::kSw].set(0, 1);
  EXPECT_EQ(op().reference(p, in)[0][0], 16774160.0);
  EXPECT_EQ(op().dtype_baseline(p, in)[0][0], double(kl::bf16_to_float(kl::double_to_bf16(16774160.0))));
}

TEST(GemmW8A8Validation, NamesTheBadValueAndWhy) {
  const std::string k = bad_input_message([] { kl::make_problem(op(), DType::f16, {{"n", 64}, {"k", 7400}}); });
  EXPECT_THAT(k, HasSubstr("k=7400"));
  EXPECT_THAT(k, HasSubstr("multiple of 16"));
  EXPECT_THAT(k, HasSubstr("16-byte"));
  EXPECT_THAT(bad_input_message([] { kl::make_problem(op(), DType::f16, {{"k", 8}}); }), HasSubstr("k=8"));
  EXPECT_THAT(bad_input_message([] { kl::make_problem(op(), DType::f16, {{"m", 0}}); }), HasSubstr("m=0"));
  EXPECT_THAT(bad_input_message([] { kl::make_problem(op(), DType::f32, {}); }), HasSubstr("fp32"));
  // The tensor-parallel slices of the issue are whole 16-byte rows: accepted.
  for (int64_t k : {10944, 7392}) EXPECT_NO_THROW(kl::make_problem(op(), DType::bf16, {{"m", 1}, {"n", 16}, {"k", k}}));
}

TEST(GemmW8A8Validation, CliExitsTwo) {
  for (const auto& [args, needle] : std::vector<std::pair<std::string, std::string>>{
           {"check gemm_w8a8 --m 4 --n 64 --k 100 --backend cpu", "k=100"},
           {"check gemm_w8a8 --m 4 --n 0 --k 128 --backend cpu", "n=0"}}) {
    const kl::test::CliResult r = kl::test::run_kernelab(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out << r.err;
    EXPECT_THAT(r.err, HasSubstr(needle)) << args;
  }
}

// 2 x 32 x 128, bf16: A and W one byte an element, sa and sw 4 bytes a row, D 2 bytes.
TEST(GemmW8A8Cost, OneByteOperandsAndFp32Scales) {
  const kl::Cost c = op().cost(kl::make_problem(op(), DType::bf16, {{"m", 2}, {"n", 32}, {"k", 128}}));
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 2 * 32 * 128);
  EXPECT_DOUBLE_EQ(c.bytes, 2 * 128 + 32 * 128 + 4 * (2 + 32) + 2 * 32 * 2.0);
}

// Symmetric per-row int8: each row's largest magnitude is code 127 (its amax over the scale), the
// scales are positive, and A's outlier channels (x20) make A's other codes small.
TEST(GemmW8A8Inputs, QuantizedPerRowWithOutlierChannels) {
  const Problem p = kl::make_problem(op(), DType::bf16, {{"m", 8}, {"n", 16}, {"k", 256}});
  const kl::Prepared prep = kl::prepare(op(), p, 11);
  for (size_t codes : {W8A8Params::kA, W8A8Params::kW}) {
    const std::vector<double> q = kl::to_doubles(prep.host_in[codes]), s = kl::to_doubles(prep.host_in[codes + 1]);
    const int64_t rows = codes == W8A8Params::kA ? 8 : 16;
    for (int64_t r = 0; r < rows; ++r) {
      double amax = 0;
      for (int64_t l = 0; l < 256; ++l) amax = std::max(amax, std::abs(q[size_t(r * 256 + l)]));
      EXPECT_EQ(amax, 127) << "tensor " << codes << " row " << r;
      EXPECT_GT(s[size_t(r)], 0);
    }
  }
  const std::vector<double> a = kl::to_doubles(prep.host_in[W8A8Params::kA]);
  int64_t small = 0;
  for (double x : a) small += std::abs(x) <= 16;
  EXPECT_GT(small, int64_t(a.size() * 9 / 10)) << "outliers set the row scale: most codes are small";
  const kl::Prepared again = kl::prepare(op(), p, 11), other = kl::prepare(op(), p, 12);
  EXPECT_EQ(kl::to_doubles(again.host_in[W8A8Params::kW]), kl::to_doubles(prep.host_in[W8A8Params::kW]));
  EXPECT_NE(kl::to_doubles(other.host_in[W8A8Params::kW]), kl::to_doubles(prep.host_in[W8A8Params::kW]));
}

// A planted bug: the per-channel weight scale indexed by D's row (sw[i]) instead of its column.
void weight_scale_by_row(const W8A8Params& a, const kl::Args& args) {
  kl::cpu::with_float_type(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    const auto* x = args.in[a.kA].as<int8_t>();
    const auto* w = args.in[a.kW].as<int8_t>();
    const float* sa = args.in[a.kSa].as<float>();
    const float* sw = args.in[a.kSw].as<float>();
    T* d = args.out[0].as<T>();
    for (int64_t i = 0; i < a.m; ++i)
      for (int64_t j = 0; j < a.n; ++j) {
        int32_t acc = 0;
        for (int64_t l = 0; l < a.k; ++l) acc += int32_t(x[i * a.k + l]) * int32_t(w[j * a.k + l]);
        d[i * a.n + j] = kl::cpu::from_float<T>(float(acc) * sa[i] * sw[i % a.n]);
      }
  });
}

TEST(GemmW8A8Check, AWeightScaleReadByRowFails) {
  const kl::Variant bad = kl::cpu_variant("gemm_w8a8", "weight_scale_by_row", "planted bug", weight_scale_by_row);
  kl::DeviceSet set = kl::open_devices({kl::Backend::cpu});
  kl::Device* cpu = kl::find_device(set, kl::Backend::cpu);
  ASSERT_NE(cpu, nullptr);
  for (DType t : {DType::f16, DType::bf16}) {
    const Problem p = kl::make_problem(op(), t, {{"m", 7}, {"n", 48}, {"k", 160}});
    const kl::CheckResult r = kl::check_variant(op(), bad, bad.configs.front(), kl::prepare(op(), p, 3), *cpu);
    EXPECT_FALSE(r.passed) << kl::dtype_name(t) << ": max_rel_err " << r.max_rel_err;
    EXPECT_GT(r.max_rel_err, 10 * r.tolerance);
  }
}

TEST(GemmW8A8Check, CliCheckPassesEveryCase) {
  const kl::test::CliResult r = kl::test::run_kernelab("check gemm_w8a8 --backend cpu");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("all variants passed"));
  EXPECT_THAT(r.out, HasSubstr("cpu_int32"));
}

#ifdef KERNELAB_HAVE_SIM_OPS
// cuda_mma_s8 at 256^3 in the simulator: one m16n8k32 per 2*16*8*32 OPs, and A and W read from DRAM
// once (the modelled L2 holds them; 128 KiB of operands) though each is copied to shared memory by two blocks.
TEST(GemmW8A8Profile, MmaS8CountsItsTensorInstructionsAndReadsTheOperandsOnce) {
  const kl::test::CliResult r =
      kl::test::run_kernelab("sim profile gemm_w8a8 --dtype bf16 --m 256 --n 256 --k 256 --variant cuda_mma_s8 --json");
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
  const double ops = 2.0 * 256 * 256 * 256;
  EXPECT_EQ(sum("sm__inst_executed_pipe_tensor_op_imma.sum"), ops / (2 * 16 * 8 * 32));
  EXPECT_EQ(sum("sim__tensor_flops.sum"), ops);
  EXPECT_EQ(sum("sim__ldgsts_bytes.sum"), 2.0 * (256 * 256) * 2) << "A and W once per block column / row: two blocks each";
  EXPECT_EQ(sum("sim__ldsm_bank_conflicts.sum"), 0) << "the XOR swizzle";
  const double operands = 2.0 * 256 * 256;
  EXPECT_NEAR(sum("model__dram_bytes_read.sum"), operands + 4 * 512, 0.05 * operands) << "A, W and the scales about once";
}

// cuda_tma_wgmma_s8 at 256^3 in the simulator: one wgmma m64n128k32 s8 per 2*64*128*32 OPs, counted per
// warp (4 per warpgroup instruction), and no IMMA; A and W arrive by TMA only, a 128 x 128 box of each
// per block and 128-deep k slice (2 x 2 blocks, 2 slices), each operand read by two blocks but from DRAM about once.
TEST(GemmW8A8Profile, TmaWgmmaS8CountsK32InstructionsAndMovesTheOperandsByTma) {
  const kl::test::CliResult r =
      kl::test::run_kernelab("sim profile gemm_w8a8 --dtype bf16 --m 256 --n 256 --k 256 --variant cuda_tma_wgmma_s8 --json");
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
  const double ops = 2.0 * 256 * 256 * 256, operands = 2.0 * 256 * 256;
  EXPECT_EQ(sum("sm__inst_executed_pipe_tensor_op_gmma.sum"), 4 * ops / (2 * 64 * 128 * 32));
  EXPECT_EQ(sum("sim__tensor_flops.sum"), ops);
  EXPECT_EQ(sum("sm__inst_executed_pipe_tensor_op_imma.sum"), 0) << "no mma.sync";
  EXPECT_EQ(sum("sim__tma_ld_requests.sum"), 2 * 2 * 2 * 2);
  EXPECT_EQ(sum("sim__tma_ld_bytes.sum"), 2 * operands) << "two blocks per operand tile";
  EXPECT_EQ(sum("sim__ldgsts_bytes.sum"), 0);
  EXPECT_NEAR(sum("model__dram_bytes_read.sum"), operands + 4 * 512, 0.05 * operands) << "A, W and the scales about once";
}
#endif

}  // namespace
