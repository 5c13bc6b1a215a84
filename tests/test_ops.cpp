// The op registry: cost models and float64 references against hand-computed numbers, the
// correctness sweep's coverage, every CPU variant against every check case, planted bugs the
// harness must catch, problem validation, the error measure, and the ladder arithmetic.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "bad_input.h"
#include "kernelab/device.h"
#include "kernelab/error.h"
#include "kernelab/harness.h"
#include "kernelab/ladder.h"
#include "kernelab/op.h"
#include "kernelab/tensor.h"
#include "ops/cpu_isa.h"
#include "ops/cpu_math.h"
#include "ops/softmax/softmax.h"

namespace {

using kl::Backend;
using kl::DType;
using kl::Op;
using kl::Problem;
using kl::Tensor;
using kl::Variant;
using ::testing::HasSubstr;

const std::vector<std::string> kOps = {"gemm",          "gemm_w4a16", "gemm_w8a8", "gemm_fp8", "attention",      "attention_bwd",  "decode", "softmax",        "layernorm",      "rmsnorm",
                                       "transpose",     "reduce",         "bias_gelu",      "fused",          "exp_stride",
                                       "exp_occupancy", "exp_smem_banks", "exp_divergence", "exp_launch",
                                       "exp_cache_bandwidth", "exp_cache_latency"};

// The message of the BadInput fn throws ("" and a test failure if it throws nothing or another type).
using kl::test::bad_input_message;

kl::Device& cpu_device() {
  static kl::DeviceSet set = kl::open_devices({Backend::cpu});
  kl::Device* d = kl::find_device(set, Backend::cpu);
  if (!d) throw std::runtime_error("no CPU device");
  return *d;
}

// Host tensors for op's inputs on p, laid out as the op declares them, zero-filled.
std::vector<Tensor> make_inputs(const Op& op, const Problem& p) {
  std::vector<Tensor> out;
  for (const kl::TensorSpec& s : op.inputs(p)) {
    out.push_back(s.strides.empty() ? Tensor::host(s.dtype, s.shape) : Tensor::host_strided(s.dtype, s.shape, s.strides));
    for (int64_t i = 0; i < out.back().numel(); ++i) out.back().set(i, 0.0);
  }
  return out;
}

// Sets a matrix by logical (row, column), whatever its strides.
void set_matrix(Tensor& t, const std::vector<std::vector<double>>& v) {
  for (size_t i = 0; i < v.size(); ++i)
    for (size_t j = 0; j < v[i].size(); ++j) t.set(t.offset({static_cast<int64_t>(i), static_cast<int64_t>(j)}), v[i][j]);
}

void set_vector(Tensor& t, const std::vector<double>& v) {
  for (size_t i = 0; i < v.size(); ++i) t.set(static_cast<int64_t>(i), v[i]);
}

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

// ---------------------------------------------------------------------------------------------
// Cost models

TEST(Cost, Gemm) {
  const Op& op = kl::find_op("gemm");
  kl::Cost c = op.cost(kl::make_problem(op, DType::f32, {{"m", 2}, {"n", 3}, {"k", 4}}));
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 2 * 3 * 4);  // 48
  EXPECT_DOUBLE_EQ(c.bytes, (8 + 12 + 6) * 4.0);  // A, B read, D written; C not read at beta 0
  c = op.cost(kl::make_problem(op, DType::f32, {{"m", 2}, {"n", 3}, {"k", 4}}, {{"beta", "0.5"}}));
  EXPECT_DOUBLE_EQ(c.flops, 48);  // alpha/beta not counted
  EXPECT_DOUBLE_EQ(c.bytes, (8 + 12 + 6 + 6) * 4.0);  // C read as well
  c = op.cost(kl::make_problem(op, DType::bf16, {{"m", 2}, {"n", 3}, {"k", 4}}));
  EXPECT_DOUBLE_EQ(c.flops, 48);
  EXPECT_DOUBLE_EQ(c.bytes, (8 + 12 + 6) * 2.0);
  c = op.cost(kl::make_problem(op, DType::f16, {{"m", 2}, {"n", 3}, {"k", 4}}, {{"alpha", "3"}, {"beta", "-1"}}));
  EXPECT_DOUBLE_EQ(c.bytes, (8 + 12 + 12) * 2.0);
  // Layout does not change the count.
  c = op.cost(kl::make_problem(op, DType::f32, {{"m", 2}, {"n", 3}, {"k", 4}}, {{"a_layout", "col"}, {"b_layout", "col"}}));
  EXPECT_DOUBLE_EQ(c.bytes, (8 + 12 + 6) * 4.0);
}

TEST(Cost, Softmax) {
  const Op& op = kl::find_op("softmax");
  kl::Cost c = op.cost(kl::make_problem(op, DType::f32, {{"rows", 3}, {"cols", 5}}));
  EXPECT_DOUBLE_EQ(c.flops, 5.0 * 15);
  EXPECT_DOUBLE_EQ(c.bytes, 2.0 * 15 * 4);
  c = op.cost(kl::make_problem(op, DType::bf16, {{"rows", 3}, {"cols", 5}}, {{"causal", "1"}}));
  EXPECT_DOUBLE_EQ(c.flops, 5.0 * 15);
  EXPECT_DOUBLE_EQ(c.bytes, 2.0 * 15 * 2);
}

TEST(Cost, Layernorm) {
  const Op& op = kl::find_op("layernorm");
  kl::Cost c = op.cost(kl::make_problem(op, DType::f32, {{"rows", 3}, {"cols", 5}}));
  EXPECT_DOUBLE_EQ(c.flops, 8.0 * 15);
  EXPECT_DOUBLE_EQ(c.bytes, (15 + 15 + 5 + 5) * 4.0);  // x, y, gamma, beta
  c = op.cost(kl::make_problem(op, DType::f32, {{"rows", 3}, {"cols", 5}}, {{"residual", "1"}}));
  EXPECT_DOUBLE_EQ(c.flops, 9.0 * 15);
  EXPECT_DOUBLE_EQ(c.bytes, (15 + 15 + 15 + 15 + 5 + 5) * 4.0);  // x, residual, y, h, gamma, beta
  c = op.cost(kl::make_problem(op, DType::f16, {{"rows", 3}, {"cols", 5}}));
  EXPECT_DOUBLE_EQ(c.bytes, (15 + 15 + 5 + 5) * 2.0);
}

TEST(Cost, Rmsnorm) {
  const Op& op = kl::find_op("rmsnorm");
  kl::Cost c = op.cost(kl::make_problem(op, DType::f32, {{"rows", 3}, {"cols", 5}}));
  EXPECT_DOUBLE_EQ(c.flops, 4.0 * 15);
  EXPECT_DOUBLE_EQ(c.bytes, (15 + 15 + 5) * 4.0);  // x, y, gamma
  c = op.cost(kl::make_problem(op, DType::bf16, {{"rows", 3}, {"cols", 5}}, {{"residual", "1"}}));
  EXPECT_DOUBLE_EQ(c.flops, 5.0 * 15);
  EXPECT_DOUBLE_EQ(c.bytes, (15 + 15 + 15 + 15 + 5) * 2.0);
}

TEST(Cost, Transpose) {
  const Op& op = kl::find_op("transpose");
  kl::Cost c = op.cost(kl::make_problem(op, DType::f32, {{"rows", 3}, {"cols", 5}}));
  EXPECT_DOUBLE_EQ(c.flops, 0);
  EXPECT_DOUBLE_EQ(c.bytes, 2.0 * 15 * 4);
  c = op.cost(kl::make_problem(op, DType::f16, {{"rows", 3}, {"cols", 5}}));
  EXPECT_DOUBLE_EQ(c.bytes, 2.0 * 15 * 2);
}

TEST(Cost, BiasGelu) {
  const Op& op = kl::find_op("bias_gelu");
  kl::Cost c = op.cost(kl::make_problem(op, DType::f32, {{"rows", 3}, {"cols", 5}}));
  EXPECT_DOUBLE_EQ(c.flops, 6.0 * 15);
  EXPECT_DOUBLE_EQ(c.bytes, (2.0 * 15 + 5) * 4);  // x, y and the bias row
  c = op.cost(kl::make_problem(op, DType::bf16, {{"rows", 3}, {"cols", 5}}));
  EXPECT_DOUBLE_EQ(c.bytes, (2.0 * 15 + 5) * 2);
}

TEST(Cost, Reduce) {
  const Op& op = kl::find_op("reduce");
  kl::Cost c = op.cost(kl::make_problem(op, DType::f32, {{"rows", 3}, {"cols", 5}}));
  EXPECT_DOUBLE_EQ(c.flops, 15);
  EXPECT_DOUBLE_EQ(c.bytes, 15 * 4.0 + 3 * 4.0);  // x read, one fp32 result per row
  c = op.cost(kl::make_problem(op, DType::f32, {{"rows", 3}, {"cols", 5}}, {{"over", "total"}}));
  EXPECT_DOUBLE_EQ(c.flops, 15);
  EXPECT_DOUBLE_EQ(c.bytes, 15 * 4.0 + 4.0);  // one fp32 result
  c = op.cost(kl::make_problem(op, DType::bf16, {{"rows", 3}, {"cols", 5}}, {{"mode", "max"}}));
  EXPECT_DOUBLE_EQ(c.flops, 15);
  EXPECT_DOUBLE_EQ(c.bytes, 15 * 2.0 + 3 * 4.0);  // the result is fp32 whatever the input
}

TEST(Cost, EveryOpStatesItsCounting) {
  for (const Op& op : kl::registry()) {
    EXPECT_FALSE(op.counting.empty()) << op.name;
    EXPECT_FALSE(op.summary.empty()) << op.name;
  }
}

// ---------------------------------------------------------------------------------------------
// References

TEST(Reference, Gemm2x2x2WithAlphaBeta) {
  const Op& op = kl::find_op("gemm");
  Problem p = kl::make_problem(op, DType::f32, {{"m", 2}, {"n", 2}, {"k", 2}}, {{"alpha", "2"}, {"beta", "0.5"}});
  auto in = make_inputs(op, p);
  set_matrix(in[0], {{1, 2}, {3, 4}});
  set_matrix(in[1], {{5, 6}, {7, 8}});
  set_matrix(in[2], {{1, 2}, {-4, 10}});
  // A B = [[19, 22], [43, 50]]; D = 2 A B + 0.5 C.
  auto ref = op.reference(p, in);
  ASSERT_EQ(ref.size(), 1u);
  expect_near_all(ref[0], {38.5, 45, 84, 105}, 1e-12);
}

TEST(Reference, GemmColumnMajorOperands) {
  const Op& op = kl::find_op("gemm");
  for (const char* la : {"row", "col"})
    for (const char* lb : {"row", "col"}) {
      SCOPED_TRACE(std::string("a_layout=") + la + " b_layout=" + lb);
      Problem p = kl::make_problem(op, DType::f32, {{"m", 2}, {"n", 3}, {"k", 2}}, {{"a_layout", la}, {"b_layout", lb}});
      auto in = make_inputs(op, p);
      if (std::string(la) == "col") { EXPECT_EQ(in[0].strides(), (std::vector<int64_t>{1, 2})); }
      if (std::string(lb) == "col") { EXPECT_EQ(in[1].strides(), (std::vector<int64_t>{1, 2})); }
      set_matrix(in[0], {{1, 2}, {3, 4}});
      set_matrix(in[1], {{1, 0, -1}, {2, 1, 0}});
      set_matrix(in[2], {{NAN, NAN, NAN}, {NAN, NAN, NAN}});  // beta 0: C is never read
      auto ref = op.reference(p, in);
      expect_near_all(ref[0], {5, 2, -1, 11, 4, -3}, 1e-12);
    }
}

TEST(Reference, SoftmaxOfZeroAndLn2) {
  const Op& op = kl::find_op("softmax");
  Problem p = kl::make_problem(op, DType::f32, {{"rows", 1}, {"cols", 2}});
  auto in = make_inputs(op, p);
  set_matrix(in[0], {{0.0, std::log(2.0)}});
  expect_near_all(op.reference(p, in)[0], {1.0 / 3, 2.0 / 3}, 1e-7);
  // scale multiplies x first: softmax(0.5 * [0, 2 ln 2]) is the same.
  p = kl::make_problem(op, DType::f32, {{"rows", 1}, {"cols", 2}}, {{"scale", "0.5"}});
  set_matrix(in[0], {{0.0, 2 * std::log(2.0)}});
  expect_near_all(op.reference(p, in)[0], {1.0 / 3, 2.0 / 3}, 1e-7);
  // Rows are independent; equal inputs give a uniform row whatever their value.
  p = kl::make_problem(op, DType::f32, {{"rows", 2}, {"cols", 4}});
  auto in2 = make_inputs(op, p);
  set_matrix(in2[0], {{3, 3, 3, 3}, {-100, 0, -100, -100}});
  const double tiny = std::exp(-100.0) / (1 + 3 * std::exp(-100.0));
  expect_near_all(op.reference(p, in2)[0], {0.25, 0.25, 0.25, 0.25, tiny, 1 - 3 * tiny, tiny, tiny}, 1e-12);
}

TEST(Reference, SoftmaxCausalMaskIsBottomRightAligned) {
  const Op& op = kl::find_op("softmax");
  // More columns than rows: row i keeps j <= i + 2.
  Problem p = kl::make_problem(op, DType::f32, {{"rows", 2}, {"cols", 4}}, {{"causal", "1"}});
  EXPECT_EQ(p.as<kl::SoftmaxParams>().valid_cols(0), 3);
  EXPECT_EQ(p.as<kl::SoftmaxParams>().valid_cols(1), 4);
  auto in = make_inputs(op, p);
  set_matrix(in[0], {{0, 0, 0, 5}, {0, 0, 0, 0}});  // the masked 5 must not count
  expect_near_all(op.reference(p, in)[0], {1.0 / 3, 1.0 / 3, 1.0 / 3, 0, 0.25, 0.25, 0.25, 0.25}, 1e-12);

  // More rows than columns: row i keeps j <= i - 1, so row 0 keeps nothing and is all zeros.
  p = kl::make_problem(op, DType::f32, {{"rows", 3}, {"cols", 2}}, {{"causal", "1"}});
  EXPECT_EQ(p.as<kl::SoftmaxParams>().valid_cols(0), 0);
  EXPECT_EQ(p.as<kl::SoftmaxParams>().valid_cols(1), 1);
  EXPECT_EQ(p.as<kl::SoftmaxParams>().valid_cols(2), 2);
  auto in2 = make_inputs(op, p);
  set_matrix(in2[0], {{1, 2}, {7, 9}, {0, std::log(2.0)}});
  expect_near_all(op.reference(p, in2)[0], {0, 0, 1, 0, 1.0 / 3, 2.0 / 3}, 1e-7);

  // Square: the usual lower triangle.
  p = kl::make_problem(op, DType::f32, {{"rows", 3}, {"cols", 3}}, {{"causal", "1"}});
  auto in3 = make_inputs(op, p);
  expect_near_all(op.reference(p, in3)[0], {1, 0, 0, 0.5, 0.5, 0, 1.0 / 3, 1.0 / 3, 1.0 / 3}, 1e-12);

  // Without the mask every column counts.
  p = kl::make_problem(op, DType::f32, {{"rows", 3}, {"cols", 2}});
  EXPECT_EQ(p.as<kl::SoftmaxParams>().valid_cols(0), 2);
}

TEST(Reference, Layernorm) {
  const Op& op = kl::find_op("layernorm");
  Problem p = kl::make_problem(op, DType::f32, {{"rows", 1}, {"cols", 3}});
  auto in = make_inputs(op, p);
  ASSERT_EQ(in.size(), 3u);  // x, gamma, beta
  set_matrix(in[0], {{1, 2, 3}});
  set_vector(in[1], {1, 1, 1});
  set_vector(in[2], {0, 0, 0});
  // mean 2, variance 2/3.
  const double r = 1 / std::sqrt(2.0 / 3 + 1e-5);
  auto ref = op.reference(p, in);
  ASSERT_EQ(ref.size(), 1u);
  expect_near_all(ref[0], {-r, 0, r}, 1e-12);
  // gamma scales and beta shifts per column.
  set_vector(in[1], {2, 1, 0.5});
  set_vector(in[2], {1, -1, 0});
  expect_near_all(op.reference(p, in)[0], {-2 * r + 1, -1, 0.5 * r}, 1e-12);
}

TEST(Reference, LayernormWithResidual) {
  const Op& op = kl::find_op("layernorm");
  Problem p = kl::make_problem(op, DType::f32, {{"rows", 2}, {"cols", 3}}, {{"residual", "1"}, {"eps", "0"}});
  auto in = make_inputs(op, p);
  ASSERT_EQ(in.size(), 4u);  // x, gamma, beta, residual
  set_matrix(in[0], {{0, 1, 2}, {5, 5, 5}});
  set_vector(in[1], {1, 1, 1});
  set_vector(in[2], {0, 0, 0});
  set_matrix(in[3], {{1, 1, 1}, {-1, 0, 1}});
  auto ref = op.reference(p, in);
  ASSERT_EQ(ref.size(), 2u);  // y and h
  const double r = 1 / std::sqrt(2.0 / 3);
  expect_near_all(ref[0], {-r, 0, r, -r, 0, r}, 1e-12);
  expect_near_all(ref[1], {1, 2, 3, 4, 5, 6}, 0);
}

TEST(Reference, Rmsnorm) {
  const Op& op = kl::find_op("rmsnorm");
  Problem p = kl::make_problem(op, DType::f32, {{"rows", 2}, {"cols", 3}});
  auto in = make_inputs(op, p);
  ASSERT_EQ(in.size(), 2u);  // x, gamma
  set_matrix(in[0], {{1, 2, 3}, {-2, 2, 0}});
  set_vector(in[1], {1, 1, 2});
  const double r0 = 1 / std::sqrt(14.0 / 3 + 1e-5), r1 = 1 / std::sqrt(8.0 / 3 + 1e-5);
  expect_near_all(op.reference(p, in)[0], {r0, 2 * r0, 6 * r0, -2 * r1, 2 * r1, 0}, 1e-12);

  p = kl::make_problem(op, DType::f32, {{"rows", 1}, {"cols", 2}}, {{"residual", "1"}, {"eps", "0"}});
  auto in2 = make_inputs(op, p);
  ASSERT_EQ(in2.size(), 3u);  // x, gamma, residual
  set_matrix(in2[0], {{1, 3}});
  set_vector(in2[1], {1, 1});
  set_matrix(in2[2], {{2, 1}});  // h = [3, 4], rms = sqrt(12.5)
  auto ref = op.reference(p, in2);
  ASSERT_EQ(ref.size(), 2u);
  expect_near_all(ref[0], {3 / std::sqrt(12.5), 4 / std::sqrt(12.5)}, 1e-12);
  expect_near_all(ref[1], {3, 4}, 0);
}

TEST(Reference, Transpose2x3) {
  const Op& op = kl::find_op("transpose");
  Problem p = kl::make_problem(op, DType::f32, {{"rows", 2}, {"cols", 3}});
  auto in = make_inputs(op, p);
  set_matrix(in[0], {{1, 2, 3}, {4, 5, 6}});
  expect_near_all(op.reference(p, in)[0], {1, 4, 2, 5, 3, 6}, 0);
  EXPECT_EQ(op.outputs(p)[0].shape, (kl::Shape{3, 2}));
}

TEST(Reference, BiasGelu) {
  // gelu(t) = t/2 (1 + erf(t/sqrt 2)): gelu(0) = 0, gelu(1) = 0.841344746..., gelu(-1) = -0.158655253...
  const Op& op = kl::find_op("bias_gelu");
  Problem p = kl::make_problem(op, DType::f32, {{"rows", 2}, {"cols", 2}});
  auto in = make_inputs(op, p);
  set_matrix(in[0], {{0.5, 2}, {-0.5, 0}});
  in[1].set(0, -0.5);
  in[1].set(1, -1);
  expect_near_all(op.reference(p, in)[0], {0, 0.8413447460685429, -0.15865525393145707, -0.15865525393145707}, 1e-15);
}

TEST(Reference, Reduce) {
  const Op& op = kl::find_op("reduce");
  const std::vector<std::vector<double>> x = {{1, 5, 3}, {-2, 0, 7}};
  struct Case {
    const char *mode, *over;
    std::vector<double> want;
  };
  for (const Case& c : {Case{"sum", "rows", {9, 5}}, Case{"max", "rows", {5, 7}}, Case{"sum", "total", {14}},
                        Case{"max", "total", {7}}}) {
    SCOPED_TRACE(std::string(c.mode) + " over " + c.over);
    Problem p = kl::make_problem(op, DType::f32, {{"rows", 2}, {"cols", 3}}, {{"mode", c.mode}, {"over", c.over}});
    auto in = make_inputs(op, p);
    set_matrix(in[0], x);
    expect_near_all(op.reference(p, in)[0], c.want, 0);
    EXPECT_EQ(op.outputs(p)[0].dtype, DType::f32);
    EXPECT_EQ(op.outputs(p)[0].shape, (kl::Shape{static_cast<int64_t>(c.want.size())}));
  }
  // A max row of negatives is the largest negative, not 0.
  Problem p = kl::make_problem(op, DType::f32, {{"rows", 1}, {"cols", 3}}, {{"mode", "max"}});
  auto in = make_inputs(op, p);
  set_matrix(in[0], {{-3, -1, -2}});
  expect_near_all(op.reference(p, in)[0], {-1}, 0);
}

// ---------------------------------------------------------------------------------------------
// The correctness sweep

TEST(CheckSweep, CoversEdgeShapesDtypesAndOptions) {
  const std::vector<int64_t> edge = {1, 7, 33, 127, 1000};
  for (const Op& op : kl::registry()) {
    if (op.experiment) continue;  // CheckSweep.ExperimentsVaryEveryDimension
    SCOPED_TRACE(op.name);
    const std::vector<Problem> cases = op.check_cases(op);
    ASSERT_FALSE(cases.empty());
    std::set<DType> dtypes;
    std::map<DType, std::map<std::string, std::set<int64_t>>> values;  // per dtype, per dimension
    std::map<std::string, std::set<std::string>> opt_values;
    std::map<DType, bool> non_square;
    for (const Problem& p : cases) {
      EXPECT_EQ(p.op, op.name);
      dtypes.insert(p.dtype);
      for (const auto& [k, v] : p.dims) values[p.dtype][k].insert(v);
      for (const auto& [k, v] : p.opts) opt_values[k].insert(v);
      std::set<int64_t> distinct;
      for (const auto& [k, v] : p.dims) distinct.insert(v);
      if (distinct.size() > 1) non_square[p.dtype] = true;
    }
    // The quantized GEMMs' activations or D are fp16/bf16 by definition; every other op also takes fp32.
    const bool quantized = op.name == "gemm_w4a16" || op.name == "gemm_w8a8" || op.name == "gemm_fp8";
    const std::set<DType> expected = quantized ? std::set<DType>{DType::f16, DType::bf16}
                                                               : std::set<DType>{DType::f32, DType::f16, DType::bf16};
    EXPECT_EQ(dtypes, expected);
    EXPECT_EQ(dtypes, std::set<DType>(op.dtypes.begin(), op.dtypes.end()));
    for (DType t : dtypes) {
      SCOPED_TRACE(std::string(kl::dtype_name(t)));
      EXPECT_TRUE(non_square[t]) << "no non-square shape";
      for (const kl::DimSpec& d : op.dims) {
        if (!d.swept) {
          EXPECT_GT(values[t][d.name].size(), 1u) << d.name << " only checked at one value";
          continue;
        }
        for (int64_t v : edge) EXPECT_TRUE(values[t][d.name].count(v)) << d.name << "=" << v << " never checked";
      }
    }
    for (const kl::OptSpec& o : op.opts) {
      if (o.values.empty()) {
        EXPECT_GT(opt_values[o.name].size(), 1u) << "numeric option " << o.name << " only checked at its default";
      } else {
        for (const std::string& v : o.values) EXPECT_TRUE(opt_values[o.name].count(v)) << o.name << "=" << v << " never checked";
      }
    }
  }
}

// An experiment is checked at sizes of 1 and not a multiple of its tiles, with every dimension
// and option value it declares taking part.
TEST(CheckSweep, ExperimentsVaryEveryDimension) {
  int experiments = 0;
  for (const Op& op : kl::registry()) {
    if (!op.experiment) continue;
    SCOPED_TRACE(op.name);
    ++experiments;
    EXPECT_EQ(op.dtypes, std::vector<DType>{DType::f32});
    std::map<std::string, std::set<int64_t>> values;
    std::map<std::string, std::set<std::string>> opt_values;
    for (const Problem& p : op.check_cases(op)) {
      for (const auto& [k, v] : p.dims) values[k].insert(v);
      for (const auto& [k, v] : p.opts) opt_values[k].insert(v);
    }
    bool has_one = false, has_odd = false;
    for (const kl::DimSpec& d : op.dims) {
      EXPECT_GT(values[d.name].size(), 1u) << d.name << " only checked at one value";
      has_one = has_one || values[d.name].count(1);
      for (int64_t v : values[d.name]) has_odd = has_odd || (v > 1 && v % 2 == 1);
    }
    EXPECT_TRUE(has_one) << "no dimension checked at 1";
    EXPECT_TRUE(has_odd) << "no dimension checked at an odd size";
    for (const kl::OptSpec& o : op.opts)
      for (const std::string& v : o.values) EXPECT_TRUE(opt_values[o.name].count(v)) << o.name << "=" << v << " never checked";
  }
  EXPECT_EQ(experiments, 7);
}

TEST(CheckSweep, RegistryHasEveryOpWithVariants) {
  std::vector<std::string> names;
  for (const Op& op : kl::registry()) {
    names.push_back(op.name);
    EXPECT_FALSE(op.variants.empty()) << op.name;
    std::set<std::string> vnames;
    for (const Variant& v : op.variants) {
      EXPECT_TRUE(vnames.insert(v.name).second) << op.name << " has two variants named " << v.name;
      EXPECT_FALSE(v.note.empty()) << op.name << " " << v.name;
      ASSERT_FALSE(v.configs.empty()) << op.name << " " << v.name;
      for (const kl::Config& c : v.configs) EXPECT_TRUE(static_cast<bool>(c.run)) << op.name << " " << v.name << " " << c.name;
      EXPECT_EQ(v.op, op.name);
      EXPECT_EQ(op.find_variant(v.name), &v);
    }
    EXPECT_EQ(op.find_variant("no_such_variant"), nullptr);
    EXPECT_EQ(&kl::find_op(op.name), &op);
  }
  EXPECT_EQ(names, kOps);
  const Op& gemm = kl::find_op("gemm");
  ASSERT_NE(gemm.find_variant("openblas"), nullptr);
  EXPECT_TRUE(gemm.find_variant("openblas")->peer);
  EXPECT_FALSE(gemm.find_variant("cpu_naive")->peer);
  EXPECT_FALSE(gemm.find_variant("cpu_tiled")->peer);
  EXPECT_THAT(bad_input_message([] { kl::find_op("gemv"); }), HasSubstr("gemv"));
}

// The default config of v on p, inputs drawn from seed.
kl::CheckResult check_one(const Op& op, const Variant& v, const Problem& p, kl::Device& dev, uint64_t seed) {
  return kl::check_variant(op, v, v.configs.front(), kl::prepare(op, p, seed), dev);
}

// Sets the x86 level the CPU rungs run for one scope (src/ops/cpu_isa.h).
struct CpuIsaScope {
  kl::cpu::Isa before = kl::cpu::isa();
  explicit CpuIsaScope(kl::cpu::Isa isa) { kl::cpu::set_isa(isa); }
  ~CpuIsaScope() { kl::cpu::set_isa(before); }
};

// Every CPU variant of one op on every check case of one dtype, in the build of one x86 level
// (each level this CPU runs: on an AVX-512 machine all three builds are checked).
// Parameters are (op name, dtype name, level): readable in test names and failure messages.
class AllVariants : public ::testing::TestWithParam<std::tuple<std::string, std::string, std::string>> {};

TEST_P(AllVariants, PassEveryCheckCase) {
  const Op& op = kl::find_op(std::get<0>(GetParam()));
  const DType dtype = kl::parse_dtype(std::get<1>(GetParam())).value();
  const CpuIsaScope level(kl::cpu::parse_isa(std::get<2>(GetParam())));
  kl::Device& cpu = cpu_device();
  uint64_t seed = 0xC0FFEE + static_cast<uint64_t>(dtype) * 100000 + std::hash<std::string>{}(op.name) % 1000;
  int ran = 0;
  for (const Problem& p : op.check_cases(op)) {
    if (p.dtype != dtype) continue;
    int ran_here = 0;
    for (const Variant& v : op.variants) {
      if (v.backend != Backend::cpu) continue;
      if (auto why = v.supports(p)) {
        EXPECT_FALSE(why->empty()) << v.name << " refuses " << p.label() << " without saying why";
        continue;
      }
      const kl::CheckResult r = check_one(op, v, p, cpu, seed++);
      EXPECT_TRUE(r.passed) << op.name << " " << v.name << " " << kl::dtype_name(p.dtype) << " " << p.label() << ": "
                            << r.failure;
      EXPECT_LE(r.max_rel_err, r.tolerance) << op.name << " " << v.name << " " << p.label();
      EXPECT_EQ(r.variant, v.name);
      ++ran_here;
    }
    EXPECT_GT(ran_here, 0) << "no CPU variant ran " << p.label();
    ran += ran_here;
  }
  EXPECT_GT(ran, 0);
}

std::vector<std::tuple<std::string, std::string, std::string>> op_dtype_levels() {
  std::vector<std::tuple<std::string, std::string, std::string>> out;
  for (const Op& op : kl::registry()) {
    // Experiments that only a GPU can run (occupancy, bank conflicts, divergence) have no CPU
    // variant; the simulator checks them (SimBackend.EveryCudaRungPassesInTheSimulator).
    const bool has_cpu = std::any_of(op.variants.begin(), op.variants.end(), [](const Variant& v) { return v.backend == Backend::cpu; });
    if (!has_cpu) continue;
    for (DType t : op.dtypes)
      for (kl::cpu::Isa isa : {kl::cpu::Isa::generic, kl::cpu::Isa::avx2, kl::cpu::Isa::avx512})
        if (isa <= kl::cpu::isa_supported()) out.emplace_back(op.name, std::string(kl::dtype_name(t)), kl::cpu::isa_name(isa));
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Registry, AllVariants, ::testing::ValuesIn(op_dtype_levels()),
                         [](const ::testing::TestParamInfo<std::tuple<std::string, std::string, std::string>>& info) {
                           return std::get<0>(info.param) + "_" + std::get<1>(info.param) + "_" + std::get<2>(info.param);
                         });

// The level the CPU rungs run: the best this CPU runs unless chosen; a level the CPU cannot run
// and an unknown name are refused with the choices named.
TEST(CpuIsa, ChosenLevelIsCheckedAndNamed) {
  EXPECT_LE(kl::cpu::isa(), kl::cpu::isa_supported());
  for (kl::cpu::Isa isa : {kl::cpu::Isa::generic, kl::cpu::Isa::avx2, kl::cpu::Isa::avx512}) {
    EXPECT_EQ(kl::cpu::parse_isa(kl::cpu::isa_name(isa)), isa);
    if (isa > kl::cpu::isa_supported()) {
      EXPECT_THAT(bad_input_message([&] { kl::cpu::set_isa(isa); }), HasSubstr("does not run"));
    } else {
      const CpuIsaScope level(isa);
      EXPECT_EQ(kl::cpu::isa(), isa);
    }
  }
  EXPECT_THAT(bad_input_message([] { kl::cpu::parse_isa("avx10"); }), HasSubstr("generic, avx2, avx512"));
}

// Only the levels this CPU runs are asked for their rung lists: the AVX-512 build's list-making
// code holds AVX-512 instructions (an illegal instruction on an AVX2-only CPU, found on a Zen 3).
TEST(CpuIsa, DispatchBuildsOnlyTheListsOfLevelsThisCpuRuns) {
  std::vector<Variant> cpu_rungs;
  for (const Variant& v : kl::find_op("softmax").variants)
    if (v.backend == Backend::cpu) cpu_rungs.push_back(v);
  std::vector<kl::cpu::Isa> asked;
  const std::vector<Variant> merged = kl::cpu::dispatched([&](kl::cpu::Isa level) {
    asked.push_back(level);
    return cpu_rungs;
  });
  std::vector<kl::cpu::Isa> runnable;
  for (kl::cpu::Isa isa : {kl::cpu::Isa::generic, kl::cpu::Isa::avx2, kl::cpu::Isa::avx512})
    if (isa <= kl::cpu::isa_supported()) runnable.push_back(isa);
  EXPECT_EQ(asked, runnable);
  EXPECT_EQ(merged.size(), cpu_rungs.size());
}

TEST(CheckVariant, UnsupportedIsReportedWithItsReason) {
  const Op& op = kl::find_op("gemm");
  const Variant* ob = op.find_variant("openblas");
  ASSERT_NE(ob, nullptr);
  Problem p = kl::make_problem(op, DType::bf16, {{"m", 4}, {"n", 4}, {"k", 4}});
  auto why = ob->supports(p);
  ASSERT_TRUE(why.has_value());
  EXPECT_FALSE(why->empty());
  kl::CheckResult r = check_one(op, *ob, p, cpu_device(), 1);
  EXPECT_FALSE(r.passed);
  EXPECT_THAT(r.failure, HasSubstr("unsupported"));
  EXPECT_THAT(r.failure, HasSubstr(*why));
}

// ---------------------------------------------------------------------------------------------
// Planted bugs: a copy of a real variant, made wrong in one way, must fail the check.

class PlantedBug : public ::testing::Test {
 protected:
  const Op& op = kl::find_op("softmax");
  const Problem p = kl::make_problem(op, DType::f32, {{"rows", 5}, {"cols", 9}});
  const Variant real = *op.find_variant("cpu_naive");

  Variant planted(const std::string& name, std::function<void(const Problem&, const kl::Args&)> after) const {
    Variant v = real;
    v.name = name;
    v.configs.front().run = [run = real.configs.front().run, after](const Problem& q, const kl::Args& a) {
      run(q, a);
      after(q, a);
    };
    return v;
  }
};

TEST_F(PlantedBug, TheUnchangedCopyPasses) {
  kl::CheckResult r = check_one(op, planted("copy", [](const Problem&, const kl::Args&) {}), p, cpu_device(), 3);
  EXPECT_TRUE(r.passed) << r.failure;
}

TEST_F(PlantedBug, OneElementTenPercentOffFails) {
  Variant v = planted("last_times_1_1", [](const Problem&, const kl::Args& a) {
    Tensor& y = a.out[0];
    const int64_t last = y.numel() - 1;
    y.set(last, y.get(last) * 1.1);
  });
  kl::CheckResult r = check_one(op, v, p, cpu_device(), 3);
  EXPECT_FALSE(r.passed);
  EXPECT_GT(r.max_rel_err, r.tolerance);
  EXPECT_TRUE(std::isfinite(r.max_rel_err));
  EXPECT_THAT(r.failure, HasSubstr("max_rel_err"));
  EXPECT_THAT(r.failure, HasSubstr("tolerance"));
}

TEST_F(PlantedBug, OneElementUnwrittenFailsAsNonFinite) {
  Variant v = real;
  v.name = "skips_last";
  v.configs.front().run = [run = real.configs.front().run](const Problem& q, const kl::Args& a) {
    // The real variant writes into scratch; all but the last element are copied out.
    Tensor scratch = Tensor::host(a.out[0].dtype(), a.out[0].shape());
    kl::Args to_scratch{a.in, std::span<Tensor>(&scratch, 1), a.workspace, a.stream};
    run(q, to_scratch);
    std::memcpy(a.out[0].data(), scratch.data(), scratch.nbytes() - sizeof(float));
  };
  kl::CheckResult r = check_one(op, v, p, cpu_device(), 3);
  EXPECT_FALSE(r.passed);
  EXPECT_TRUE(std::isinf(r.max_rel_err));
  EXPECT_THAT(r.failure, HasSubstr("non-finite"));
}

TEST_F(PlantedBug, WritingPastTheEndFailsOnTheGuard) {
  Variant v = planted("writes_past_end", [](const Problem&, const kl::Args& a) {
    a.out[0].as<float>()[a.out[0].numel()] = 0.5f;
  });
  kl::CheckResult r = check_one(op, v, p, cpu_device(), 3);
  EXPECT_FALSE(r.passed);
  EXPECT_THAT(r.failure, HasSubstr("out of bounds"));
  EXPECT_THAT(r.failure, HasSubstr("guard"));
}

TEST_F(PlantedBug, WritingBeforeTheStartFailsOnTheGuard) {
  Variant v = planted("writes_before_start", [](const Problem&, const kl::Args& a) { a.out[0].as<float>()[-1] = 0.5f; });
  kl::CheckResult r = check_one(op, v, p, cpu_device(), 3);
  EXPECT_FALSE(r.passed);
  EXPECT_THAT(r.failure, HasSubstr("guard"));
}

TEST_F(PlantedBug, ModifyingTheInputFails) {
  Variant v = planted("scribbles_on_x", [](const Problem&, const kl::Args& a) {
    Tensor& x = const_cast<Tensor&>(a.in[0]);
    x.set(3, x.get(3) + 0.25);
  });
  kl::CheckResult r = check_one(op, v, p, cpu_device(), 3);
  EXPECT_FALSE(r.passed);
  EXPECT_THAT(r.failure, HasSubstr("input 0"));
  EXPECT_THAT(r.failure, HasSubstr("modified"));
}

TEST(PlantedBugGemm, IgnoringTheLayoutOfAFailsOnColumnMajorA) {
  const Op& op = kl::find_op("gemm");
  Variant v;
  v.name = "assumes_row_major_a";
  v.configs = {kl::Config{}};
  v.configs[0].name = "default";
  v.configs[0].run = [](const Problem& p, const kl::Args& a) {  // fp32 only; reads A as if row-major
    const int64_t m = p.dim("m"), n = p.dim("n"), k = p.dim("k");
    const float* A = a.in[0].as<float>();
    const Tensor& B = a.in[1];
    float* D = a.out[0].as<float>();
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        float acc = 0;
        for (int64_t l = 0; l < k; ++l) acc += A[i * k + l] * B.as<float>()[B.offset({l, j})];
        D[i * n + j] = acc;
      }
  };
  Problem row = kl::make_problem(op, DType::f32, {{"m", 7}, {"n", 5}, {"k", 6}});
  Problem col = kl::make_problem(op, DType::f32, {{"m", 7}, {"n", 5}, {"k", 6}}, {{"a_layout", "col"}});
  EXPECT_TRUE(check_one(op, v, row, cpu_device(), 5).passed);
  kl::CheckResult r = check_one(op, v, col, cpu_device(), 5);
  EXPECT_FALSE(r.passed);
  EXPECT_THAT(r.failure, HasSubstr("max_rel_err"));
}

// ---------------------------------------------------------------------------------------------
// Problems

TEST(MakeProblem, DefaultsAndOverrides) {
  const Op& op = kl::find_op("gemm");
  Problem p = kl::make_problem(op, DType::bf16, {{"m", 2}}, {{"beta", "0.5"}});
  EXPECT_EQ(p.op, "gemm");
  EXPECT_EQ(p.dtype, DType::bf16);
  EXPECT_EQ(p.dim("m"), 2);
  EXPECT_EQ(p.dim("n"), 1024);
  EXPECT_EQ(p.dim("k"), 1024);
  EXPECT_EQ(p.opt("alpha"), "1");
  EXPECT_EQ(p.opt_number("beta"), 0.5);
  EXPECT_EQ(p.opt("a_layout"), "row");
  EXPECT_EQ(p.shape_str(), "k=1024,m=2,n=1024");
  EXPECT_EQ(p.label(), "k=1024,m=2,n=1024,a_layout=row,alpha=1,b_layout=row,beta=0.5,epilogue=none,residual=0");
  EXPECT_THAT(bad_input_message([&] { p.dim("rows"); }), HasSubstr("rows"));
  EXPECT_THAT(bad_input_message([&] { p.opt("causal"); }), HasSubstr("causal"));
  Problem s = kl::make_problem(kl::find_op("softmax"), DType::f32, {}, {{"causal", "1"}});
  EXPECT_TRUE(s.opt_flag("causal"));
  EXPECT_FALSE(kl::make_problem(kl::find_op("softmax"), DType::f32).opt_flag("causal"));
}

TEST(MakeProblem, RejectsBadValuesNamingThem) {
  const Op& gemm = kl::find_op("gemm");
  const Op& softmax = kl::find_op("softmax");
  EXPECT_THAT(bad_input_message([&] { kl::make_problem(gemm, DType::f32, {{"rows", 3}}); }), HasSubstr("'rows'"));
  EXPECT_THAT(bad_input_message([&] { kl::make_problem(softmax, DType::f32, {{"m", 3}}); }), HasSubstr("'m'"));
  EXPECT_THAT(bad_input_message([&] { kl::make_problem(gemm, DType::f32, {{"m", 0}}); }), HasSubstr("m=0"));
  EXPECT_THAT(bad_input_message([&] { kl::make_problem(gemm, DType::f32, {{"k", -3}}); }), HasSubstr("k=-3"));
  EXPECT_THAT(bad_input_message([&] { kl::make_problem(softmax, DType::f32, {{"cols", 0}}); }), HasSubstr("cols=0"));
  EXPECT_THAT(bad_input_message([&] { kl::make_problem(gemm, DType::f32, {}, {{"gamma", "1"}}); }), HasSubstr("'gamma'"));
  EXPECT_THAT(bad_input_message([&] { kl::make_problem(gemm, DType::f32, {}, {{"a_layout", "diag"}}); }),
              HasSubstr("'diag'"));
  EXPECT_THAT(bad_input_message([&] { kl::make_problem(softmax, DType::f32, {}, {{"causal", "maybe"}}); }),
              HasSubstr("'maybe'"));
  EXPECT_THAT(bad_input_message([&] { kl::make_problem(gemm, DType::f32, {}, {{"alpha", "abc"}}); }), HasSubstr("'abc'"));
  EXPECT_THAT(bad_input_message([&] { kl::make_problem(gemm, DType::f32, {}, {{"alpha", "1.5x"}}); }),
              HasSubstr("'1.5x'"));
  EXPECT_THAT(bad_input_message([&] { kl::make_problem(gemm, DType::f32, {}, {{"beta", ""}}); }), HasSubstr("beta"));
  EXPECT_THAT(bad_input_message([&] { kl::make_problem(softmax, DType::f32, {}, {{"scale", "nan"}}); }),
              HasSubstr("'nan'"));
  EXPECT_THAT(bad_input_message([&] { kl::make_problem(softmax, DType::f32, {}, {{"scale", "inf"}}); }),
              HasSubstr("'inf'"));
  EXPECT_THAT(bad_input_message([&] { kl::make_problem(gemm, DType::e4m3); }),
              HasSubstr(std::string(kl::dtype_name(DType::e4m3))));
  EXPECT_THAT(bad_input_message([&] { kl::make_problem(softmax, DType::i8); }),
              HasSubstr(std::string(kl::dtype_name(DType::i8))));
  const int64_t big = int64_t{1} << 30;
  EXPECT_THAT(bad_input_message([&] { kl::make_problem(gemm, DType::f32, {{"m", big}, {"n", big}, {"k", big}}); }),
              HasSubstr("m=1073741824"));
  EXPECT_THAT(bad_input_message([&] { kl::make_problem(softmax, DType::f32, {{"rows", big}, {"cols", big}}); }),
              HasSubstr("rows=1073741824"));
  EXPECT_THAT(bad_input_message([&] { kl::make_problem(gemm, DType::f32, {{"n", int64_t{1} << 50}}); }),
              HasSubstr(std::to_string(int64_t{1} << 50)));
}

TEST(MakeProblem, EveryCheckCaseRoundTrips) {
  // A check case rebuilt from its own dims and options is the same problem.
  for (const Op& op : kl::registry())
    for (const Problem& p : op.check_cases(op)) {
      Problem q = kl::make_problem(op, p.dtype, p.dims, p.opts);
      ASSERT_EQ(q.label(), p.label());
    }
}

TEST(Backend, NamesRoundTrip) {
  for (Backend b : {Backend::cpu, Backend::cuda, Backend::sim}) EXPECT_EQ(kl::parse_backend(kl::backend_name(b)), b);
  EXPECT_FALSE(kl::parse_backend("gpu").has_value());
  kl::DeviceSet set = kl::open_devices({Backend::cpu, Backend::sim});
  ASSERT_NE(kl::find_device(set, Backend::cpu), nullptr);
#ifdef KERNELAB_HAVE_SIM_OPS
  ASSERT_NE(kl::find_device(set, Backend::sim), nullptr);
  EXPECT_FALSE(kl::find_device(set, Backend::sim)->times());  // the simulator checks, never times
#else
  EXPECT_EQ(kl::find_device(set, Backend::sim), nullptr);
  ASSERT_EQ(set.absent.size(), 1u);
  EXPECT_THAT(set.absent[0], HasSubstr("sim"));
#endif
}

// ---------------------------------------------------------------------------------------------
// The error measure

Tensor matrix_f32(const std::vector<std::vector<double>>& v) {
  Tensor t = Tensor::host(DType::f32, {static_cast<int64_t>(v.size()), static_cast<int64_t>(v[0].size())});
  set_matrix(t, v);
  return t;
}

TEST(MaxRelErr, PerRowVersusWholeOutput) {
  const std::vector<double> ref = {1, 2, 100, 200};
  Tensor y = matrix_f32({{1.25, 2}, {100, 200}});
  // Per row: row 0 is off by 0.25 against its largest |r| of 2.
  EXPECT_DOUBLE_EQ(kl::max_rel_err(y, ref, true), 0.125);
  // Whole output: 0.25 against the largest |r| of 200.
  EXPECT_DOUBLE_EQ(kl::max_rel_err(y, ref, false), 0.25 / 200);
  // The default is per row.
  EXPECT_DOUBLE_EQ(kl::max_rel_err(y, ref), 0.125);
  // Exact output: 0 either way.
  Tensor exact = matrix_f32({{1, 2}, {100, 200}});
  EXPECT_EQ(kl::max_rel_err(exact, ref, true), 0);
  EXPECT_EQ(kl::max_rel_err(exact, ref, false), 0);
  // The worst row counts.
  Tensor y2 = matrix_f32({{1, 2.5}, {110, 200}});
  EXPECT_DOUBLE_EQ(kl::max_rel_err(y2, ref, true), 0.25);
}

TEST(MaxRelErr, NonFiniteOutputIsInfinite) {
  const std::vector<double> ref = {1, 2, 3, 4};
  Tensor y = matrix_f32({{1, 2}, {3, 4}});
  y.set(2, NAN);
  EXPECT_TRUE(std::isinf(kl::max_rel_err(y, ref, true)));
  EXPECT_TRUE(std::isinf(kl::max_rel_err(y, ref, false)));
  y.set(2, INFINITY);
  EXPECT_TRUE(std::isinf(kl::max_rel_err(y, ref, true)));
  y.poison();
  EXPECT_TRUE(std::isinf(kl::max_rel_err(y, ref, false)));
}

// The tensor form reads y in place (rows in parallel, strides applied); it must give what the form
// over the values read gives, on a strided y, with an infinite reference matched and then not.
TEST(MaxRelErr, ReadInPlaceAgreesWithTheValuesRead) {
  Tensor y = Tensor::host_strided(DType::f32, {3, 5}, {1, 3});  // column-major: rows are strided
  for (int64_t off = 0; off < 15; ++off) y.set(off, 0.37 * double(off * off % 11) - 1.5);
  std::vector<double> ref = kl::to_doubles(y);
  for (size_t i = 0; i < ref.size(); ++i) ref[i] += 0.01 * double(i % 4) - 0.015;
  y.set(7, INFINITY);
  ref[2 * 5 + 2] = INFINITY;  // element (2, 2) sits at storage offset 2 + 2 * 3 = 8, not 7
  EXPECT_TRUE(std::isinf(kl::max_rel_err(y, ref, true)));
  y.set(7, 1.0), y.set(8, INFINITY);
  for (bool per_row : {true, false}) {
    const double in_place = kl::max_rel_err(y, ref, per_row), read = kl::max_rel_err(kl::to_doubles(y), ref, per_row ? 5 : 0);
    EXPECT_GT(in_place, 0);
    EXPECT_EQ(in_place, read) << "per_row " << per_row;
  }
  y.set(8, -INFINITY);
  EXPECT_TRUE(std::isinf(kl::max_rel_err(y, ref, false)));
}

TEST(MaxRelErr, ZeroRowsAndShapeMismatch) {
  // A reference row of zeros: any difference is infinitely wrong, none is exact.
  EXPECT_EQ(kl::max_rel_err(matrix_f32({{0, 0}, {1, 1}}), {0, 0, 1, 1}, true), 0);
  EXPECT_TRUE(std::isinf(kl::max_rel_err(matrix_f32({{0, 1e-3}, {1, 1}}), {0, 0, 1, 1}, true)));
  // A wrong number of elements is infinitely wrong.
  EXPECT_TRUE(std::isinf(kl::max_rel_err(matrix_f32({{1, 2}}), {1, 2, 3}, true)));
  // A 1-D output is one row.
  Tensor v = Tensor::host(DType::f32, {3});
  set_vector(v, {1, 2, 10.5});
  EXPECT_DOUBLE_EQ(kl::max_rel_err(v, {1, 2, 10}, true), 0.05);
}

TEST(MaxRelErr, ReadsStridedOutputsInLogicalOrder) {
  Tensor t = Tensor::host_strided(DType::f32, {2, 3}, {1, 2});
  set_matrix(t, {{1, 2, 3}, {4, 5, 6}});
  EXPECT_EQ(kl::to_doubles(t), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(kl::max_rel_err(t, {1, 2, 3, 4, 5, 6}, true), 0);
}

TEST(Tolerance, DefaultsByDtype) {
  EXPECT_DOUBLE_EQ(kl::default_tolerance(DType::f32), 1e-5);
  EXPECT_DOUBLE_EQ(kl::default_tolerance(DType::f16), 4 * std::ldexp(1.0, -11));
  EXPECT_DOUBLE_EQ(kl::default_tolerance(DType::bf16), 4 * std::ldexp(1.0, -8));
  EXPECT_EQ(kl::find_op("transpose").tolerance(kl::make_problem(kl::find_op("transpose"), DType::bf16)), 0);
  const Op& reduce = kl::find_op("reduce");
  EXPECT_EQ(reduce.tolerance(kl::make_problem(reduce, DType::f32, {}, {{"mode", "max"}})), 0);
  EXPECT_GT(reduce.tolerance(kl::make_problem(reduce, DType::f32)), 0);
}

// ---------------------------------------------------------------------------------------------
// Ladders

kl::Point gemm_point(const std::string& variant, bool peer, double median_s, int64_t m = 64) {
  const Op& op = kl::find_op("gemm");
  Problem p = kl::make_problem(op, DType::f32, {{"m", m}, {"n", 64}, {"k", 64}});
  kl::Point pt;
  pt.op = "gemm";
  pt.variant = variant;
  pt.config = "default";
  pt.backend = "cpu";
  pt.shape = p.shape_str();
  pt.label = p.label();
  pt.dtype = "fp32";
  pt.peer = peer;
  pt.median_s = median_s;
  pt.device = "test-cpu";
  return pt;
}

TEST(Ladder, RatiosAgainstTheRungBelowAndThePeer) {
  // Given out of order: the ladder follows the registry (naive, tiled, then the peer).
  std::vector<kl::Point> pts = {gemm_point("openblas", true, 0.5e-3), gemm_point("cpu_tiled", false, 1e-3),
                                gemm_point("cpu_naive", false, 8e-3)};
  auto ladders = kl::make_ladders(pts);
  ASSERT_EQ(ladders.size(), 1u);
  const kl::Ladder& L = ladders[0];
  EXPECT_EQ(L.op, "gemm");
  EXPECT_EQ(L.dtype, "fp32");
  EXPECT_EQ(L.backend, "cpu");
  EXPECT_EQ(L.device, "test-cpu");
  ASSERT_EQ(L.rows.size(), 3u);
  EXPECT_EQ(L.rows[0].point.variant, "cpu_naive");
  EXPECT_EQ(L.rows[1].point.variant, "cpu_tiled");
  EXPECT_EQ(L.rows[2].point.variant, "openblas");
  EXPECT_FALSE(L.rows[0].note.empty());

  EXPECT_FALSE(L.rows[0].vs_below.has_value());  // the bottom rung has none below
  ASSERT_TRUE(L.rows[0].vs_peer.has_value());
  EXPECT_DOUBLE_EQ(*L.rows[0].vs_peer, 0.5e-3 / 8e-3);
  EXPECT_EQ(L.rows[0].peer, "openblas");

  ASSERT_TRUE(L.rows[1].vs_below.has_value());
  EXPECT_DOUBLE_EQ(*L.rows[1].vs_below, 8.0);
  EXPECT_EQ(L.rows[1].below, "cpu_naive");
  ASSERT_TRUE(L.rows[1].vs_peer.has_value());
  EXPECT_DOUBLE_EQ(*L.rows[1].vs_peer, 0.5);

  // The peer is compared against, never a rung: no ratio to the rung below, none to itself.
  EXPECT_FALSE(L.rows[2].vs_below.has_value());
  EXPECT_FALSE(L.rows[2].vs_peer.has_value());
  EXPECT_TRUE(L.rows[2].below.empty());
}

TEST(Ladder, ThePeerIsNeverTheRungBelow) {
  // Without cpu_tiled the peer sits between naive and nothing; naive's "below" stays empty
  // and nothing is compared to the peer as a rung.
  auto ladders = kl::make_ladders({gemm_point("cpu_naive", false, 4e-3), gemm_point("openblas", true, 1e-3)});
  ASSERT_EQ(ladders.size(), 1u);
  ASSERT_EQ(ladders[0].rows.size(), 2u);
  for (const kl::LadderRow& r : ladders[0].rows) {
    EXPECT_NE(r.below, "openblas");
    EXPECT_FALSE(r.vs_below.has_value()) << r.point.variant;
  }
  ASSERT_TRUE(ladders[0].rows[0].vs_peer.has_value());
  EXPECT_DOUBLE_EQ(*ladders[0].rows[0].vs_peer, 0.25);

  // Without a peer there are no peer ratios.
  auto alone = kl::make_ladders({gemm_point("cpu_naive", false, 4e-3), gemm_point("cpu_tiled", false, 2e-3)});
  ASSERT_EQ(alone[0].rows.size(), 2u);
  for (const kl::LadderRow& r : alone[0].rows) EXPECT_FALSE(r.vs_peer.has_value());
  EXPECT_DOUBLE_EQ(*alone[0].rows[1].vs_below, 2.0);
}

TEST(Ladder, GroupsByProblemAndFindsCrossovers) {
  // m=1: tiled is slower than naive (a crossover); m=256: faster.
  std::vector<kl::Point> pts = {gemm_point("cpu_naive", false, 1e-6, 1), gemm_point("cpu_tiled", false, 4e-6, 1),
                                gemm_point("cpu_naive", false, 2e-3, 256), gemm_point("cpu_tiled", false, 1e-4, 256),
                                gemm_point("openblas", true, 5e-5, 256)};
  auto ladders = kl::make_ladders(pts);
  ASSERT_EQ(ladders.size(), 2u);
  EXPECT_THAT(ladders[0].label, HasSubstr("m=1,"));
  EXPECT_THAT(ladders[1].label, HasSubstr("m=256,"));
  ASSERT_EQ(ladders[0].rows.size(), 2u);
  ASSERT_EQ(ladders[1].rows.size(), 3u);
  EXPECT_DOUBLE_EQ(*ladders[0].rows[1].vs_below, 0.25);
  EXPECT_DOUBLE_EQ(*ladders[1].rows[1].vs_below, 20.0);

  auto cx = kl::find_crossovers(ladders, "m");
  ASSERT_EQ(cx.size(), 1u);
  EXPECT_EQ(cx[0].op, "gemm");
  EXPECT_EQ(cx[0].variant, "cpu_tiled");
  EXPECT_EQ(cx[0].below, "cpu_naive");
  EXPECT_EQ(cx[0].backend, "cpu");
  EXPECT_EQ(cx[0].dtype, "fp32");
  EXPECT_EQ(cx[0].axis_value, "1");
  EXPECT_DOUBLE_EQ(cx[0].speedup, 0.25);

  // A peer faster than every rung is not a crossover.
  auto none = kl::find_crossovers({ladders[1]}, "m");
  EXPECT_TRUE(none.empty());
}

TEST(Ladder, DifferentDtypesAndBackendsAreSeparateLadders) {
  kl::Point a = gemm_point("cpu_naive", false, 1e-3), b = gemm_point("cpu_tiled", false, 1e-4);
  b.dtype = "bf16";
  auto ladders = kl::make_ladders({a, b});
  ASSERT_EQ(ladders.size(), 2u);
  for (const kl::Ladder& L : ladders) {
    ASSERT_EQ(L.rows.size(), 1u);
    EXPECT_FALSE(L.rows[0].vs_below.has_value());
  }
}

}  // namespace

namespace {

uint32_t float_bits(float f) { return std::bit_cast<uint32_t>(f); }

// The CPU rungs' branch-free fp16 conversions (ops/cpu_math.h) against the reference ones:
// every fp16 pattern widened; narrowed, every fp16 value's neighbourhood (the value, the midpoints
// to its neighbours and one float ulp either side of them, both signs) and a stride through all
// float patterns (NaNs, infinities, subnormals of both formats, overflow).
TEST(CpuHalf, BranchFreeConversionsAreBitExact) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float got = kl::cpu::to_float(kl::cpu::Half{static_cast<uint16_t>(h)});
    ASSERT_EQ(float_bits(got), float_bits(kl::f16_to_float(static_cast<uint16_t>(h)))) << std::hex << h;
  }
  auto narrow = [](float f) { return kl::cpu::from_float<kl::cpu::Half>(f).bits; };
  int64_t checked = 0;
  for (uint32_t h = 0; h < 0x7C00; ++h) {
    const float lo = kl::f16_to_float(static_cast<uint16_t>(h)), hi = kl::f16_to_float(static_cast<uint16_t>(h + 1));
    const float mid = 0.5f * (lo + hi);  // exact: fp16 values are far inside float's precision
    for (float f : {lo, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY), hi})
      for (float s : {f, -f}) {
        ASSERT_EQ(narrow(s), kl::float_to_f16(s)) << std::hexfloat << s;
        ++checked;
      }
  }
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 4099) {
    const float f = std::bit_cast<float>(static_cast<uint32_t>(u));
    ASSERT_EQ(narrow(f), kl::float_to_f16(f)) << std::hex << u;
    ++checked;
  }
  EXPECT_GT(checked, 1000000);
}

// Where the i-th float of a pair (a's lanes, then b's) sits among a pair's 2 kLanes elements of T:
// in order, except bf16's even elements in a and odd in b (cpu_math.h's pair order).
template <class T> int64_t element_of(int64_t i) {
  constexpr int64_t lanes = kl::cpu::kLanes;
  if constexpr (std::is_same_v<T, kl::cpu::BHalf>) return i < lanes ? 2 * i : 2 * (i - lanes) + 1;
  return i;
}

// The vector conversions of load_pair and store_pair, here the generic level's (SSE2 has no fp16
// instructions: both directions in integer arithmetic), bit-exact with to_float and from_float:
// every 16-bit pattern widened; narrowed, every fp16 value's neighbourhood as above and a stride
// through all float patterns.
template <class T> void expect_pair_conversions_exact() {
  constexpr int64_t kPair = kl::cpu::kPair;
  T in[kPair];
  float wide[kPair];
  for (uint32_t h0 = 0; h0 < 0x10000; h0 += kPair) {
    for (int64_t e = 0; e < kPair; ++e) in[e] = T{static_cast<uint16_t>(h0 + e)};
    kl::cpu::store_pair(wide, kl::cpu::load_pair(in), false);
    for (int64_t i = 0; i < kPair; ++i)
      ASSERT_EQ(float_bits(wide[i]), float_bits(kl::cpu::to_float(in[element_of<T>(i)]))) << std::hex << h0 + element_of<T>(i);
  }
  std::vector<float> floats;
  for (uint32_t h = 0; h < 0x7C00; ++h) {
    const float lo = kl::f16_to_float(static_cast<uint16_t>(h)), hi = kl::f16_to_float(static_cast<uint16_t>(h + 1));
    const float mid = 0.5f * (lo + hi);
    for (float f : {lo, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)}) floats.insert(floats.end(), {f, -f});
  }
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 4099) floats.push_back(std::bit_cast<float>(static_cast<uint32_t>(u)));
  floats.resize(floats.size() / kPair * kPair);
  for (size_t k = 0; k < floats.size(); k += kPair) {
    T out[kPair];
    kl::cpu::store_pair(out, kl::cpu::load_pair(&floats[k]), false);
    for (int64_t i = 0; i < kPair; ++i)
      ASSERT_EQ(out[element_of<T>(i)].bits, kl::cpu::from_float<T>(floats[k + i]).bits) << std::hexfloat << floats[k + i];
  }
}
TEST(CpuHalf, PairConversionsAreBitExact) {
  expect_pair_conversions_exact<kl::cpu::Half>();
  expect_pair_conversions_exact<kl::cpu::BHalf>();
}

// The exp2 polynomial of softmax's CPU rung keeps the relative error its comment states (2.3e-7 in
// float; here without FMA, the generic build's) over every exponent a softmax meets, t in [-126, 0],
// and at the points where f changes sign and n steps.
TEST(CpuMath, Exp2PolynomialKeepsItsStatedError) {
  double worst = 0;
  for (int64_t i = 0; i <= 126 * 4096; ++i) {
    const float t = -static_cast<float>(i) / 4096.0f;
    for (float u : {t, std::nextafter(t, 1.0f), std::nextafter(t, -INFINITY)}) {
      if (u > 0.0f || u < -126.0f) continue;
      const double want = std::exp2(static_cast<double>(u));
      worst = std::max(worst, std::abs(kl::cpu::exp2_scalar(u) - want) / want);
    }
  }
  EXPECT_LT(worst, 3e-7);
  EXPECT_EQ(kl::cpu::exp2_scalar(-1000.0f), std::ldexp(kl::cpu::exp2_scalar(0.0f), -127));  // clamped, not 0 or a NaN
}

// The norms' row sums (cpu::pair_sum, here at the generic level, SSE2: 4 lanes, pairs of 8) against
// a float64 sum, on lengths around the pair and the four accumulators' 16 (the vector levels' are
// checked by the norms' check cases at every level, Registry/AllVariants).
TEST(CpuMath, RowSumsMatchFloat64) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-2.0f, 3.0f);
  for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 23, 24, 25, 63, 64, 65, 129, 1000, 8192}) {
    std::vector<float> v(static_cast<size_t>(n));
    double s = 0, magnitude = 0;
    for (float& x : v) {
      x = dist(rng);
      s += x;
      magnitude += std::abs(x);
    }
    const double mean = s / static_cast<double>(n);
    double sq = 0;
    for (float x : v) sq += (x - static_cast<float>(mean)) * static_cast<double>(x - static_cast<float>(mean));
    EXPECT_NEAR(kl::cpu::pair_sum<false>(v.data(), n), s, 2e-6 * magnitude) << n;  // one element left out is 1/n of it
    EXPECT_NEAR(kl::cpu::pair_sum<true>(v.data(), n, static_cast<float>(mean)), sq, 1e-5 * sq) << n;
  }
}


// bias_gelu's fused rung at every level this CPU runs (AVX-512: cpu::vgelu_table; AVX2:
// cpu::vgelu's rational; generic: fast_gelu) against gelu in float64, on the special values first
// (in the vector part of the row: +-inf, NaN, +-1e30, the table's ends) and then t every 2^-10 over
// [-8, 8], bias 0. fp32: within 1.2e-6 absolute, 5e-7 relative at t > 0 (the table's 3.7e-7 there,
// 5.2e-7 absolute; the rational's 1.9e-7 and 9.4e-7; the generic level's scalar one 1.0e-6 at
// t = -5.14, where 1 + erf rounds to 0 in float). 16-bit: never more than one ulp from gelu
// rounded once to the dtype where |gelu| >= 1e-3, and under 1% of them not that value (the
// rational without its Newton step, which the 16-bit rows ran before, was up to 3.9e-2 away in the
// negative tail on AVX-512 and 8% on AVX2: 11-12% misrounded, 7.5% by more than one ulp).
TEST(CpuMath, GeluKeepsItsStatedError) {
  const Op& op = kl::find_op("bias_gelu");
  const Variant& fused = *op.find_variant("cpu_fused");
  std::vector<double> ts = {INFINITY, -INFINITY, NAN, 1e30, -1e30, 5.5, -5.5, 5.4999, -5.4999, 0.0, -0.0};
  for (int i = -8192; i <= 8192; ++i) ts.push_back(i / 1024.0);
  const int64_t cols = static_cast<int64_t>(ts.size());
  const auto bits = [](const Tensor& v, int64_t k) { return static_cast<const uint16_t*>(v.data())[k]; };
  const auto ordered = [](uint16_t b) { return b & 0x8000 ? -int(b & 0x7FFF) : int(b); };
  for (kl::cpu::Isa isa : {kl::cpu::Isa::generic, kl::cpu::Isa::avx2, kl::cpu::Isa::avx512}) {
    if (isa > kl::cpu::isa_supported()) continue;
    const CpuIsaScope level(isa);
    for (DType t : {DType::f32, DType::f16, DType::bf16}) {
      const Problem p = kl::make_problem(op, t, {{"rows", 1}, {"cols", cols}});
      kl::Prepared prep = kl::prepare(op, p, 5);
      for (int64_t j = 0; j < cols; ++j) prep.host_in[0].set(j, ts[static_cast<size_t>(j)]), prep.host_in[1].set(j, 0.0);
      const std::vector<double> gelu = op.reference(p, prep.host_in)[0];  // the op's own float64 gelu
      std::vector<Tensor> out = {Tensor::host(t, {1, cols})};
      Tensor &y = out[0], rounded = Tensor::host(t, {1, cols});
      fused.configs.front().run(p, kl::Args{prep.host_in, out});
      int misrounded = 0, compared = 0;
      for (int64_t j = 0; j < cols; ++j) {
        const double x = prep.host_in[0].get(j), g = gelu[static_cast<size_t>(j)], got = y.get(j);
        const auto at = [&] {
          return std::string(kl::cpu::isa_name(isa)) + " " + std::string(kl::dtype_name(t)) + " t = " + std::to_string(x) +
                 ": got " + std::to_string(got) + ", gelu " + std::to_string(g);
        };
        if (!std::isfinite(g)) {
          EXPECT_TRUE(std::isnan(g) ? std::isnan(got) : got == g) << at();
          continue;
        }
        if (t == DType::f32) {
          EXPECT_LE(std::abs(got - g), x > 0 ? 5e-7 * g : 1.2e-6) << at();
          continue;
        }
        rounded.set(j, g);
        if (std::abs(g) < 1e-3) continue;
        EXPECT_LE(std::abs(ordered(bits(y, j)) - ordered(bits(rounded, j))), 1) << at();
        misrounded += bits(y, j) != bits(rounded, j);
        ++compared;
      }
      if (t != DType::f32) {
        EXPECT_LT(misrounded, compared / 100) << kl::cpu::isa_name(isa) << " " << kl::dtype_name(t) << ": " << misrounded << " of "
                                              << compared << " misrounded";
      }
    }
  }
}

// Special values through the vector stores of every level: layernorm with gamma 0 writes y = beta
// (0 times a finite value, plus beta), so beta's infinities, subnormals, largest values and NaNs
// (signalling, negative, with payloads) come out through each level's pair stores, on rows of whole
// pairs and a tail (77 columns). 16-bit NaNs come out as the canonical 0x7FFF, as from_float
// gives them; fp32 ones as NaNs.
TEST(CpuMath, VectorStoresKeepSpecialValues) {
  const Op& op = kl::find_op("layernorm");
  const Variant& fused = *op.find_variant("cpu_fused");
  const int64_t rows = 3, cols = 77;
  for (DType t : {DType::f32, DType::f16, DType::bf16})
    for (kl::cpu::Isa isa : {kl::cpu::Isa::generic, kl::cpu::Isa::avx2, kl::cpu::Isa::avx512}) {
      if (isa > kl::cpu::isa_supported()) continue;
      const CpuIsaScope level(isa);
      const Problem p = kl::make_problem(op, t, {{"rows", rows}, {"cols", cols}});
      kl::Prepared prep = kl::prepare(op, p, 11);
      Tensor& gamma = prep.host_in[1];
      Tensor& beta = prep.host_in[2];
      const double tiny = t == DType::f32 ? 1.4e-45 : t == DType::f16 ? 5.96e-8 : 9.2e-41;  // the smallest subnormal
      const double big = t == DType::f32 ? 3.4028234e38 : t == DType::f16 ? 65504.0 : 3.3895314e38;
      const std::vector<double> specials = {INFINITY, -INFINITY, tiny, -tiny, big, -big, 1.5, -2.25, NAN};
      for (int64_t j = 0; j < cols; ++j) {
        gamma.set(j, 0.0);
        beta.set(j, specials[static_cast<size_t>(j) % specials.size()]);
      }
      if (t != DType::f32)  // NaNs with payloads, signalling and negative ones: each store must make them 0x7FFF
        for (int64_t j = 0; j < cols; ++j)
          if (std::isnan(beta.get(j))) static_cast<uint16_t*>(beta.data())[j] = j % 2 ? 0xFE01 : (t == DType::bf16 ? 0x7F81 : 0x7C01);
      std::vector<Tensor> out;
      for (const kl::TensorSpec& spec : op.outputs(p)) {
        out.push_back(Tensor::host(spec.dtype, spec.shape));
        std::memset(out.back().data(), 0x55, static_cast<size_t>(out.back().numel()) * kl::dtype_bits(t) / 8);
      }
      fused.configs.front().run(p, kl::Args{prep.host_in, out});
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          const double want = beta.get(j), got = out[0].get(i * cols + j);
          const std::string at = std::string(kl::dtype_name(t)) + " " + kl::cpu::isa_name(isa) + " column " + std::to_string(j);
          if (!std::isnan(want)) {
            EXPECT_EQ(got, want) << at;
          } else if (t == DType::f32) {
            EXPECT_TRUE(std::isnan(got)) << at;
          } else {
            EXPECT_EQ(static_cast<const uint16_t*>(out[0].data())[i * cols + j], 0x7FFF) << at;
          }
        }
    }
}

}  // namespace
