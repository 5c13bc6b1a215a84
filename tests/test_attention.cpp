// The attention op: FlashAttention-3's FLOP count, the bottom-right aligned mask and windows, the
// float64 reference on hand-computed cases (a row with no key included), variable length through
// --seqlens with its errors, and FlashAttention's tolerance rule (twice a naive-in-dtype error).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "bad_input.h"
#include "kernelab/device.h"
#include "kernelab/error.h"
#include "kernelab/harness.h"
#include "kernelab/op.h"
#include "ops/attention/attention.h"
#include "test_sim_util.h"

namespace {

using kl::DType;
using kl::Op;
using kl::Problem;
using kl::Tensor;
using ::testing::HasSubstr;

const Op& attention() { return kl::find_op("attention"); }

using kl::test::bad_input_message;

TEST(Attention, CountsFlopsAsFlashAttention3) {
  const Op& op = attention();
  auto cost = [&](std::map<std::string, int64_t> d, std::map<std::string, std::string> o = {}) {
    return op.cost(kl::make_problem(op, DType::bf16, d, o, kl::Use::cost_only));
  };
  const std::map<std::string, int64_t> d = {{"batch", 2}, {"heads", 8}, {"kv_heads", 2}, {"seq_q", 512}, {"seq_kv", 512}, {"head_dim", 64}};
  EXPECT_DOUBLE_EQ(cost(d).flops, 4.0 * 2 * 8 * 512 * 512 * 64);
  EXPECT_DOUBLE_EQ(cost(d, {{"causal", "1"}}).flops, 2.0 * 2 * 8 * 512 * 512 * 64) << "half at s_q = s_kv";
  auto chunk = d;
  chunk["seq_q"] = 128;  // a chunk of 128 queries at the end of 512 keys: (max(0, 512 - 128) + 512) / 2 = 448 each
  EXPECT_DOUBLE_EQ(cost(chunk, {{"causal", "1"}}).flops, 2.0 * 2 * 8 * 2 * 128 * 448 * 64);
  // Bytes: Q and O (8 heads), K and V (2 heads) in bf16 once, the LSE in fp32.
  EXPECT_DOUBLE_EQ(cost(d).bytes, (2.0 * 2 * 512 * 8 * 64 + 2.0 * 2 * 512 * 2 * 64) * 2 + 4.0 * 2 * 512 * 8);
  // d != dv: 2 s_q s_kv (d + dv) per head.
  auto mla = d;
  mla["head_dim"] = 192, mla["head_dim_v"] = 128;
  EXPECT_DOUBLE_EQ(cost(mla).flops, 2.0 * 2 * 8 * 512 * 512 * (192 + 128));
  // Variable length: the sum over sequences.
  EXPECT_DOUBLE_EQ(cost({{"heads", 1}, {"kv_heads", 1}, {"head_dim", 64}}, {{"seqlens", "1,17,300"}}).flops,
                   4.0 * 64 * (1 + 17 * 17 + 300 * 300));
  // A window of W keys before each query (causal): min(i, W) + 1 keys for query i.
  const double seen = [] {
    double s = 0;
    for (int i = 0; i < 100; ++i) s += std::min(i, 10) + 1;
    return s;
  }();
  EXPECT_DOUBLE_EQ(cost({{"batch", 1}, {"heads", 1}, {"kv_heads", 1}, {"seq_q", 100}, {"seq_kv", 100}, {"head_dim", 64}},
                        {{"causal", "1"}, {"window", "10"}})
                       .flops,
                   2.0 * 100 * (seen / 100) * 128);
}

kl::AttentionParams params(std::map<std::string, int64_t> d, std::map<std::string, std::string> o) {
  const Op& op = attention();
  return kl::make_problem(op, DType::f16, d, o, kl::Use::cost_only).as<kl::AttentionParams>();
}

TEST(Attention, TheMaskIsBottomRightAligned) {
  using Range = std::pair<int64_t, int64_t>;
  auto a = params({{"batch", 1}, {"seq_q", 2}, {"seq_kv", 3}}, {{"causal", "1"}});
  EXPECT_EQ(a.visible(0, 0), Range(0, 2));  // query 0 sits at key 1
  EXPECT_EQ(a.visible(0, 1), Range(0, 3));
  a = params({{"batch", 1}, {"seq_q", 3}, {"seq_kv", 2}}, {{"causal", "1"}});
  EXPECT_EQ(a.visible(0, 0), Range(0, 0)) << "query 0 sits before key 0: it sees nothing";
  EXPECT_EQ(a.visible(0, 2), Range(0, 2));
  a = params({{"batch", 1}, {"seq_q", 5}, {"seq_kv", 5}}, {{"causal", "1"}, {"window", "1"}});
  EXPECT_EQ(a.visible(0, 3), Range(2, 4));
  a = params({{"batch", 1}, {"seq_q", 5}, {"seq_kv", 5}}, {{"window", "1"}});
  EXPECT_EQ(a.visible(0, 3), Range(2, 5));
  EXPECT_EQ(a.visible(0, 4), Range(3, 5));
  EXPECT_DOUBLE_EQ(params({{"head_dim", 64}}, {}).scale, 0.125) << "1/sqrt(d) by default";
  EXPECT_EQ(params({{"head_dim", 128}}, {}).head_dim_v, 128) << "dv follows d unless given";
}

Tensor f32(kl::Shape s, std::vector<float> v) {
  Tensor t = Tensor::host(DType::f32, s);
  for (size_t i = 0; i < v.size(); ++i) t.set(int64_t(i), v[i]);
  return t;
}

TEST(Attention, ReferenceOnHandComputedRows) {
  const Op& op = attention();
  // One query against two keys, d = dv = 1, scale 1: scores 0 and ln 2, p = 1/3, 2/3; O = 3/3 + 12/3.
  const Problem p = kl::make_problem(op, DType::f32, {{"batch", 1}, {"seq_q", 1}, {"seq_kv", 2}, {"heads", 1}, {"kv_heads", 1},
                                                      {"head_dim", 1}}, {{"scale", "1"}});
  const std::vector<Tensor> in = {f32({1, 1, 1}, {1}), f32({2, 1, 1}, {0, float(std::log(2.0))}), f32({2, 1, 1}, {3, 6})};
  const auto out = op.reference(p, in);
  EXPECT_NEAR(out[0][0], 5, 1e-6);
  EXPECT_NEAR(out[1][0], std::log(3.0), 1e-6);
  // Causal with s_q > s_kv: the first query sees no key, so O = 0 and LSE = +inf.
  const Problem c = kl::make_problem(op, DType::f32, {{"batch", 1}, {"seq_q", 2}, {"seq_kv", 1}, {"heads", 1}, {"kv_heads", 1},
                                                      {"head_dim", 1}}, {{"causal", "1"}, {"scale", "1"}});
  const auto masked = op.reference(c, std::vector<Tensor>{f32({2, 1, 1}, {1, 2}), f32({1, 1, 1}, {0.5f}), f32({1, 1, 1}, {7})});
  EXPECT_EQ(masked[0][0], 0);
  EXPECT_TRUE(std::isinf(masked[1][0]) && masked[1][0] > 0);
  EXPECT_NEAR(masked[0][1], 7, 1e-6) << "the second query sees the one key";
  EXPECT_NEAR(masked[1][1], 1.0, 1e-6);
}

TEST(Attention, SeqlensSetTheBatchAndRefuseContradictions) {
  const Op& op = attention();
  const Problem p = kl::make_problem(op, DType::bf16, {{"heads", 4}, {"kv_heads", 2}}, {{"seqlens", "1,17,300"}});
  EXPECT_EQ(p.dim("batch"), 3);
  EXPECT_EQ(p.dim("seq_q"), 300);
  const auto& a = p.as<kl::AttentionParams>();
  EXPECT_EQ(a.q_start, (std::vector<int64_t>{0, 1, 18, 318}));
  EXPECT_EQ(a.kv_start, a.q_start);
  EXPECT_EQ(op.inputs(p)[0].shape, (kl::Shape{318, 4, 64}));
  EXPECT_EQ(op.outputs(p)[1].shape, (kl::Shape{4, 318}));
  const Problem kv = kl::make_problem(op, DType::bf16, {}, {{"seqlens", "5,1"}, {"seqlens_kv", "40,9"}});
  EXPECT_EQ(kv.as<kl::AttentionParams>().kv_start, (std::vector<int64_t>{0, 40, 49}));
  EXPECT_EQ(kv.dim("seq_kv"), 40);
  auto refused = [&](std::map<std::string, int64_t> d, std::map<std::string, std::string> o) {
    return bad_input_message([&] { kl::make_problem(op, DType::bf16, d, o); });
  };
  EXPECT_THAT(refused({{"batch", 2}}, {{"seqlens", "1,17,300"}}), HasSubstr("--seqlens sets batch to 3, and --batch says 2"));
  EXPECT_THAT(refused({}, {{"seqlens", "1,2"}, {"seqlens_kv", "3"}}), HasSubstr("--seqlens has 2 sequences and --seqlens-kv 1"));
  EXPECT_THAT(refused({}, {{"seqlens_kv", "3"}}), HasSubstr("--seqlens-kv needs --seqlens"));
  EXPECT_THAT(refused({}, {{"seqlens", "1,,2"}}), HasSubstr("not a comma-separated list of positive integers"));
  EXPECT_THAT(refused({}, {{"seqlens", "0,2"}}), HasSubstr("seqlens='0,2'"));
  EXPECT_THAT(refused({{"heads", 6}, {"kv_heads", 4}}, {}), HasSubstr("--heads=6 is not a multiple of --kv-heads=4"));
  EXPECT_THAT(refused({}, {{"window", "-1"}}), HasSubstr("--window=-1"));
  EXPECT_THAT(refused({}, {{"scale", "0"}}), HasSubstr("--scale=0 must be positive"));
  // The same problem rebuilt from its own (derived) dimensions is accepted.
  EXPECT_EQ(kl::make_problem(op, DType::bf16, p.dims, p.opts).label(), p.label());
}

// FlashAttention's rule: a rung may err twice as much as naive attention computed in the input
// dtype, plus the dtype's rounding floor. The baseline's error is real (half-precision scores and
// probabilities) and small.
TEST(Attention, ToleranceIsTwiceTheNaiveInDtypeErrorPlusAFloor) {
  const Op& op = attention();
  for (DType t : {DType::f16, DType::bf16}) {
    const Problem p = kl::make_problem(op, t, {{"batch", 1}, {"seq_q", 127}, {"seq_kv", 127}, {"heads", 2}, {"kv_heads", 1}});
    const kl::Prepared prep = kl::prepare(op, p, 7);
    EXPECT_GT(prep.baseline_err, kl::dtype_epsilon(t) / 4) << kl::dtype_name(t);
    EXPECT_LT(prep.baseline_err, 16 * kl::dtype_epsilon(t)) << kl::dtype_name(t);
  }
}

// The backward's float64 reference against central differences of the forward's on a small causal
// GQA problem with d != dv: the gradient of L = sum(O o dO) with respect to each element of Q, K, V.
TEST(AttentionBwd, ReferenceIsTheForwardsGradient) {
  const Op& bwd = kl::find_op("attention_bwd");
  const Problem p = kl::make_problem(bwd, DType::f32, {{"batch", 2}, {"seq_q", 3}, {"seq_kv", 5}, {"heads", 2}, {"kv_heads", 1},
                                                       {"head_dim", 2}, {"head_dim_v", 3}}, {{"causal", "1"}, {"window", "3"}});
  const kl::Prepared prep = kl::prepare(bwd, p, 11);
  const auto& a = p.as<kl::AttentionParams>();
  std::vector<std::vector<double>> x = {kl::to_doubles(prep.host_in[0]), kl::to_doubles(prep.host_in[1]), kl::to_doubles(prep.host_in[2])};
  const std::vector<double> d_o = kl::to_doubles(prep.host_in[5]);
  // The derived inputs are the forward's outputs.
  const auto fwd = kl::attention_forward_f64(a, x[0], x[1], x[2]);
  EXPECT_LT(kl::max_rel_err(kl::to_doubles(prep.host_in[3]), fwd[0], 3), 1e-6);
  EXPECT_LT(kl::max_rel_err(kl::to_doubles(prep.host_in[4]), fwd[1], 0), 1e-6);
  auto loss = [&] {
    const auto o = kl::attention_forward_f64(a, x[0], x[1], x[2])[0];
    double l = 0;
    for (size_t i = 0; i < o.size(); ++i) l += o[i] * d_o[i];
    return l;
  };
  const double eps = 1e-6;
  for (size_t t = 0; t < 3; ++t)
    for (size_t i = 0; i < x[t].size(); ++i) {
      const double keep = x[t][i];
      x[t][i] = keep + eps;
      const double up = loss();
      x[t][i] = keep - eps;
      const double down = loss();
      x[t][i] = keep;
      EXPECT_NEAR(prep.ref[t][i], (up - down) / (2 * eps), 1e-6) << "tensor " << t << " element " << i;
    }
  EXPECT_DOUBLE_EQ(bwd.cost(p).flops, 2.5 * kl::find_op("attention").cost(kl::make_problem(kl::find_op("attention"), DType::f32, p.dims,
                                                                                          {{"causal", "1"}, {"window", "3"}})).flops);
}

// The tolerance catches what matters: a rung that ignores the causal mask, or whose O is 1% off.
TEST(Attention, PlantedBugsFailTheCheck) {
  const Op& op = attention();
  static kl::DeviceSet devices = kl::open_devices({kl::Backend::cpu});
  kl::Device& cpu = *kl::find_device(devices, kl::Backend::cpu);
  const Problem p = kl::make_problem(op, DType::f16, {{"batch", 2}, {"seq_q", 33}, {"seq_kv", 127}, {"heads", 2}, {"kv_heads", 1}},
                                     {{"causal", "1"}});
  const kl::Prepared prep = kl::prepare(op, p, 5);
  kl::Variant good = *op.find_variant("cpu_tiled");
  EXPECT_TRUE(kl::check_variant(op, good, good.configs[0], prep, cpu).passed);
  kl::Variant unmasked = good;
  unmasked.configs[0].run = [run = good.configs[0].run](const Problem& q, const kl::Args& a) {
    Problem open = q;
    kl::AttentionParams params = q.as<kl::AttentionParams>();
    params.causal = false;
    open.params = params;
    run(open, a);
  };
  EXPECT_FALSE(kl::check_variant(op, unmasked, unmasked.configs[0], prep, cpu).passed);
  kl::Variant off = good;
  off.configs[0].run = [run = good.configs[0].run](const Problem& q, const kl::Args& a) {
    run(q, a);
    for (int64_t i = 0; i < a.out[0].numel(); ++i) a.out[0].set(i, a.out[0].get(i) * 1.01);
  };
  const kl::CheckResult r = kl::check_variant(op, off, off.configs[0], prep, cpu);
  EXPECT_FALSE(r.passed) << r.max_rel_err << " against " << r.tolerance;
}

// One key per sequence: every P is 1, so dS, dQ and dK are exactly zero, and a rung's dQ is its
// rounding noise. It may be twice the naive-in-dtype baseline's noise (FlashAttention's rule in
// absolute terms), and a dQ of ones fails; dV (= dO) is measured as usual.
TEST(AttentionBwd, ZeroGradientsAreCheckedInAbsoluteTerms) {
  const Op& op = kl::find_op("attention_bwd");
  static kl::DeviceSet devices = kl::open_devices({kl::Backend::cpu});
  kl::Device& cpu = *kl::find_device(devices, kl::Backend::cpu);
  const Problem p = kl::make_problem(op, DType::f16, {{"batch", 2}, {"seq_q", 7}, {"seq_kv", 1}, {"heads", 2}, {"kv_heads", 1}});
  const kl::Prepared prep = kl::prepare(op, p, 3);
  ASSERT_EQ(prep.zero_output_limit.size(), 3u);
  EXPECT_GE(prep.zero_output_limit[0], 0) << "dQ is all zeros";
  EXPECT_GE(prep.zero_output_limit[1], 0) << "dK is all zeros";
  EXPECT_LT(prep.zero_output_limit[2], 0) << "dV is not";
  kl::Variant good = *op.find_variant("cpu_tiled");
  EXPECT_TRUE(kl::check_variant(op, good, good.configs[0], prep, cpu).passed);
  kl::Variant noisy = good;
  noisy.configs[0].run = [run = good.configs[0].run](const Problem& q, const kl::Args& a) {
    run(q, a);
    a.out[0].set(0, 1.0);
  };
  EXPECT_FALSE(kl::check_variant(op, noisy, noisy.configs[0], prep, cpu).passed);
}

#if KERNELAB_HAVE_SIM && KERNELAB_HAVE_SIM_OPS
// --deterministic: dQ has the same bits whichever order the blocks run in (the simulator runs them
// one at a time, forward, then backward); dQ by atomics adds the key tiles' parts in block order,
// so its last bits follow that order, and both pass the check.
TEST(AttentionBwd, DeterministicDqHasTheSameBitsInEitherBlockOrder) {
  const Op& op = kl::find_op("attention_bwd");
  static kl::DeviceSet devices = kl::open_devices({kl::Backend::sim});
  kl::Device& sim = *kl::find_device(devices, kl::Backend::sim);
  for (const char* name : {"cuda_flash2", "cuda_flash2_mma"}) {
    SCOPED_TRACE(name);
    const kl::Variant& rung = *op.find_variant(name);
    const auto dq = [&](const char* deterministic, kl::sim::Order order) {
      const Problem p = kl::make_problem(op, DType::f16,
                                         {{"batch", 2}, {"seq_q", 100}, {"seq_kv", 300}, {"heads", 4}, {"kv_heads", 2}, {"head_dim", 64}},
                                         {{"causal", "1"}, {"deterministic", deterministic}});
      std::vector<double> out;
      kl::Variant v = rung;
      v.configs[0].sim_run = [&](const Problem& q, const kl::Args& a) {
        rung.configs[0].sim_run(q, a);
        const Tensor host = sim.download(a.out[0]);
        for (int64_t i = 0; i < host.numel(); ++i) out.push_back(host.get(i));
      };
      const kl::sim::Options saved = kl::sim::options();
      kl::sim::options().serial = true, kl::sim::options().order = order;
      const kl::CheckResult r = kl::check_variant(op, v, v.configs[0], kl::prepare(op, p, 13), sim);
      kl::sim::options() = saved;
      EXPECT_TRUE(r.passed) << r.failure;
      return out;
    };
    using kl::sim::Order;
    EXPECT_EQ(dq("1", Order::forward), dq("1", Order::reverse));
    EXPECT_NE(dq("0", Order::forward), dq("0", Order::reverse)) << "the atomics' order shows in dQ's last bits";
  }
}
#endif

TEST(MaxRelErr, AnInfiniteReferenceMustBeMatchedExactly) {
  const std::vector<double> ref = {1, INFINITY};
  EXPECT_EQ(kl::max_rel_err(std::vector<double>{1, INFINITY}, ref, 2), 0);
  EXPECT_TRUE(std::isinf(kl::max_rel_err(std::vector<double>{1, 30}, ref, 2)));
  EXPECT_TRUE(std::isinf(kl::max_rel_err(std::vector<double>{1, -INFINITY}, ref, 2)));
  EXPECT_TRUE(std::isinf(kl::max_rel_err(std::vector<double>{1, NAN}, ref, 0)));
}

}  // namespace
