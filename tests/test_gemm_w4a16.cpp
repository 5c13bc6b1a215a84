// gemm_w4a16 (W4A16's op contract): the reference against hand-computed numbers for each zero-point
// convention, the validation messages (in the library and through the CLI's exit code 2), the
// derived weights (W_packed is W's codes in fragment order; realistic codes and scales), the cost,
// planted wrong rungs (the zero point forgotten, the fragment layout ignored) that the check must
// catch, and `kernelab check gemm_w4a16` passing.
// Tolerance (the op's): 4 units of the dtype's roundoff (fp16 2^-11, bf16 2^-8) plus twice the error
// of the op computed as a kernel in the dtype would (op.dtype_baseline), over the whole of D.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

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
#include "ops/gemm_w4a16/gemm_w4a16.h"
#include "quant/w4_fragments.h"
#include "zero_inputs.h"

namespace {

using kl::DType;
using kl::Op;
using kl::Problem;
using kl::Tensor;
using ::testing::HasSubstr;

const Op& op() { return kl::find_op("gemm_w4a16"); }

using kl::test::bad_input_message;

std::vector<Tensor> zero_inputs(const Problem& p) { return kl::test::zero_inputs(op(), p); }

// 1 x 16 x 64 (k is one group of 64): A = 1 at k 0 and -2 at k 5, zero elsewhere; row j of W
// holds v = j - 8 at k 0 and v = 3 at k 5; every scale 0.5; GPTQ's zero code 5 (stored -3), AWQ's
// zero 0.75. So D_j = deq(j - 8) - 2 deq(3), by hand:
//   none: 0.5 (j - 8) - 2 * 0.5 * 3                = 0.5 (j - 14)
//   gptq: 0.5 (j - 5) - 2 * 0.5 * (11 - 5)         = 0.5 (j - 17)
//   awq:  (0.5 j - 0.75) - 2 (0.5 * 11 - 0.75)     = 0.5 (j - 22) + 0.75
TEST(GemmW4A16Reference, HandComputedPerZeroConvention) {
  const std::map<std::string, double> offset = {{"none", -7.0}, {"gptq", -8.5}, {"awq", -10.25}};  // D_0
  for (DType t : {DType::f16, DType::bf16})
    for (const auto& [zero, d0] : offset) {
      SCOPED_TRACE(zero + " " + std::string(kl::dtype_name(t)));
      const Problem p = kl::make_problem(op(), t, {{"m", 1}, {"n", 16}, {"k", 64}}, {{"group", "64"}, {"zero", zero}});
      std::vector<Tensor> in = zero_inputs(p);
      in[0].set(0, 1.0);
      in[0].set(5, -2.0);
      for (int64_t j = 0; j < 16; ++j) {
        in[1].set(j * 64 + 0, double(j - 8));
        in[1].set(j * 64 + 5, 3.0);
        in[2].set(j, 0.5);
        if (zero == "gptq") in[3].set(j, -3.0);
        if (zero == "awq") in[3].set(j, 0.75);
      }
      const std::vector<std::vector<double>> ref = op().reference(p, in), base = op().dtype_baseline(p, in);
      ASSERT_EQ(ref.size(), 1u);
      ASSERT_EQ(ref[0].size(), 16u);
      for (int64_t j = 0; j < 16; ++j) {
        EXPECT_DOUBLE_EQ(ref[0][size_t(j)], d0 + 0.5 * double(j)) << "j=" << j;
        EXPECT_DOUBLE_EQ(base[0][size_t(j)], ref[0][size_t(j)]) << "every value here is exact in the dtype";
      }
    }
}

TEST(GemmW4A16Validation, NamesTheBadValueAndWhy) {
  const std::string k = bad_input_message([] { kl::make_problem(op(), DType::f16, {{"n", 64}, {"k", 10944}}); });
  EXPECT_THAT(k, HasSubstr("k=10944"));
  EXPECT_THAT(k, HasSubstr("group 128"));
  EXPECT_THAT(k, HasSubstr("one scale"));
  EXPECT_THAT(k, HasSubstr("--group 64"));  // 10944 = 171 * 64
  EXPECT_THAT(bad_input_message([] { kl::make_problem(op(), DType::f16, {{"k", 96}}, {{"group", "64"}}); }),
              HasSubstr("k=96 is not a multiple of the group 64"));
  const std::string n = bad_input_message([] { kl::make_problem(op(), DType::bf16, {{"n", 40}, {"k", 128}}); });
  EXPECT_THAT(n, HasSubstr("n=40"));
  EXPECT_THAT(n, HasSubstr("n16 x k16"));
  EXPECT_THAT(bad_input_message([] { kl::make_problem(op(), DType::f32, {}); }), HasSubstr("fp32"));
  EXPECT_THAT(bad_input_message([] { kl::make_problem(op(), DType::f16, {}, {{"zero", "hqq"}}); }), HasSubstr("hqq"));
  EXPECT_THAT(bad_input_message([] { kl::make_problem(op(), DType::f16, {}, {{"group", "32"}}); }), HasSubstr("'32'"));
}

TEST(GemmW4A16Validation, CliExitsTwo) {
  for (const auto& [args, needle] : std::vector<std::pair<std::string, std::string>>{
           {"check gemm_w4a16 --m 4 --n 64 --k 10944 --backend cpu", "k=10944"},
           {"check gemm_w4a16 --m 4 --n 40 --k 128 --backend cpu", "n=40"},
           {"check gemm_w4a16 --m 4 --n 64 --k 192 --group 128 --backend cpu", "k=192"}}) {
    const kl::test::CliResult r = kl::test::run_kernelab(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out << r.err;
    EXPECT_THAT(r.err, HasSubstr(needle)) << args;
  }
}

// 2 x 32 x 128, group 64, fp16: A and D 2 bytes each, W half a byte, a 2-byte scale per group (two
// per row), GPTQ's zero half a byte, AWQ's 2 bytes. W_packed is W again: not counted twice.
TEST(GemmW4A16Cost, FewestBytesAtFourBitWeights) {
  const std::map<std::string, double> zeros = {{"none", 0}, {"gptq", 32 * 2 / 2.0}, {"awq", 32 * 2 * 2.0}};
  for (const auto& [zero, z] : zeros) {
    const kl::Cost c = op().cost(kl::make_problem(op(), DType::f16, {{"m", 2}, {"n", 32}, {"k", 128}}, {{"group", "64"}, {"zero", zero}}));
    EXPECT_DOUBLE_EQ(c.flops, 2.0 * 2 * 32 * 128);
    EXPECT_DOUBLE_EQ(c.bytes, (2 * 128 + 2 * 32) * 2.0 + 32 * 128 / 2.0 + 32 * 2 * 2.0 + z) << zero;
  }
}

TEST(GemmW4A16Weights, PackedIsWAndCodesAreRealistic) {
  for (const char* zero : {"none", "gptq", "awq"}) {
    SCOPED_TRACE(zero);
    const Problem p = kl::make_problem(op(), DType::bf16, {{"m", 3}, {"n", 48}, {"k", 192}}, {{"group", "64"}, {"zero", zero}});
    const kl::W4A16Params& a = p.as<kl::W4A16Params>();
    const kl::Prepared prep = kl::prepare(op(), p, 7);
    const std::vector<Tensor>& in = prep.host_in;
    const std::vector<double> w = kl::to_doubles(in[a.kW]), s = kl::to_doubles(in[a.kScales]);
    const Tensor& packed = in[a.packed_index()];
    const auto* words = packed.as<uint32_t>();
    const std::vector<uint8_t> codes = kl::quant::unpack_w4_fragments({words, words + packed.numel()}, a.n, a.k);
    std::set<double> distinct;
    for (size_t i = 0; i < w.size(); ++i) {
      ASSERT_EQ(double(codes[i]), w[i] + 8) << "element " << i;
      distinct.insert(w[i]);
    }
    EXPECT_GE(distinct.size(), 12u) << "the codes should span the int4 range";
    for (double x : s) EXPECT_GT(x, 0);
    EXPECT_GT(std::set<double>(s.begin(), s.end()).size(), s.size() / 2) << "a scale per group, fitted to it";
    if (a.zero == kl::W4Zero::gptq) {
      for (double z : kl::to_doubles(in[a.kZeros])) EXPECT_TRUE(z >= -8 && z <= 7);
    }
    const kl::Prepared again = kl::prepare(op(), p, 7), other = kl::prepare(op(), p, 8);
    EXPECT_EQ(kl::to_doubles(again.host_in[a.kW]), w) << "the weight follows the seed";
    EXPECT_NE(kl::to_doubles(other.host_in[a.kW]), w);
  }
}

// A planted bug: every weight dequantized as symmetric, s * (code - 8), whatever the zero point.
void forgets_zero_point(const kl::W4A16Params& a, const kl::Args& args) {
  kl::cpu::with_float_type(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* A = args.in[a.kA].as<T>();
    const T* s = args.in[a.kScales].as<T>();
    const auto* W = args.in[a.kW].as<uint8_t>();
    T* D = args.out[0].as<T>();
    for (int64_t i = 0; i < a.m; ++i)
      for (int64_t j = 0; j < a.n; ++j) {
        float acc = 0;
        for (int64_t l = 0; l < a.k; ++l)
          acc += kl::cpu::to_float(A[i * a.k + l]) * kl::cpu::to_float(s[j * a.groups() + l / a.group]) * float(kl::i4_get(W, j * a.k + l));
        D[i * a.n + j] = kl::cpu::from_float<T>(acc);
      }
  });
}

TEST(GemmW4A16Check, ForgettingTheZeroPointFails) {
  const kl::Variant bad = kl::cpu_variant("gemm_w4a16", "forgets_zero_point", "planted bug", forgets_zero_point);
  kl::DeviceSet set = kl::open_devices({kl::Backend::cpu});
  kl::Device* cpu = kl::find_device(set, kl::Backend::cpu);
  ASSERT_NE(cpu, nullptr);
  for (DType t : {DType::f16, DType::bf16})
    for (const char* zero : {"none", "gptq", "awq"}) {
      const Problem p = kl::make_problem(op(), t, {{"m", 7}, {"n", 48}, {"k", 192}}, {{"group", "64"}, {"zero", zero}});
      const kl::CheckResult r = kl::check_variant(op(), bad, bad.configs.front(), kl::prepare(op(), p, 3), *cpu);
      if (std::string(zero) == "none") {
        EXPECT_TRUE(r.passed) << "symmetric weights have no zero point to forget: " << r.failure;
      } else {
        EXPECT_FALSE(r.passed) << zero << " " << kl::dtype_name(t) << ": max_rel_err " << r.max_rel_err;
        EXPECT_GT(r.max_rel_err, 10 * r.tolerance) << zero;
      }
    }
}

// A planted bug: W_packed read as if its nibbles were W's codes in row-major order (no fragment layout).
void reads_packed_row_major(const kl::W4A16Params& a, const kl::Args& args) {
  kl::cpu::with_float_type(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* A = args.in[a.kA].as<T>();
    const T* s = args.in[a.kScales].as<T>();
    const auto* words = args.in[a.packed_index()].as<uint32_t>();
    T* D = args.out[0].as<T>();
    for (int64_t i = 0; i < a.m; ++i)
      for (int64_t j = 0; j < a.n; ++j) {
        float acc = 0;
        for (int64_t l = 0; l < a.k; ++l) {
          const int64_t e = j * a.k + l;
          const int code = int(words[e / 8] >> (4 * (e % 8)) & 0xfu);
          acc += kl::cpu::to_float(A[i * a.k + l]) * kl::cpu::to_float(s[j * a.groups() + l / a.group]) * float(code - 8);
        }
        D[i * a.n + j] = kl::cpu::from_float<T>(acc);
      }
  });
}

TEST(GemmW4A16Check, IgnoringTheFragmentLayoutFails) {
  const kl::Variant bad = kl::cpu_variant("gemm_w4a16", "reads_packed_row_major", "planted bug", reads_packed_row_major);
  kl::DeviceSet set = kl::open_devices({kl::Backend::cpu});
  kl::Device* cpu = kl::find_device(set, kl::Backend::cpu);
  ASSERT_NE(cpu, nullptr);
  const Problem p = kl::make_problem(op(), DType::f16, {{"m", 7}, {"n", 48}, {"k", 192}}, {{"group", "64"}});
  const kl::CheckResult r = kl::check_variant(op(), bad, bad.configs.front(), kl::prepare(op(), p, 5), *cpu);
  EXPECT_FALSE(r.passed) << "max_rel_err " << r.max_rel_err;
  EXPECT_GT(r.max_rel_err, 10 * r.tolerance);
}

TEST(GemmW4A16Check, CliCheckPassesEveryCase) {
  const kl::test::CliResult r = kl::test::run_kernelab("check gemm_w4a16 --backend cpu");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("all variants passed"));
  EXPECT_THAT(r.out, HasSubstr("cpu_dequant_gemm"));
  EXPECT_THAT(r.out, HasSubstr("cpu_packed"));
}

}  // namespace
