// The analytic cost models against hand-computed cases (the arithmetic is in the comments), then
// the must-show cases on the hardware database's ceilings.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "kernelab/error.h"
#include "model/analysis.h"
#include "model/cost.h"
#include "model/explain.h"
#include "model/roofline.h"

namespace {

using namespace kl::model;
using ::testing::HasSubstr;

// Relative comparison for the large counts and the times.
#define EXPECT_REL(a, b) EXPECT_NEAR((a), (b), 1e-9 * std::abs(b))

Request request(const std::string& op, const std::string& gpu, std::map<std::string, int64_t> dims,
                std::set<std::string> switches = {}, const std::string& dtype = "bf16") {
  Request r;
  r.op = op;
  r.gpu = gpu;
  r.dtype = dtype;
  r.dims = std::move(dims);
  r.switches = std::move(switches);
  return r;
}

// ---------------------------------------------------------------- formulas, no database

TEST(Roofline, MemoryComputeAndTie) {
  // 100 FLOPs, 10 bytes on 1000 FLOP/s, 10 B/s: intensity 10, ridge 100, t 0.1 s vs 1 s.
  Roofline r = roofline({100, 10}, 1000, 10);
  EXPECT_DOUBLE_EQ(r.intensity, 10);
  EXPECT_DOUBLE_EQ(r.ridge, 100);
  EXPECT_DOUBLE_EQ(r.t_compute_s, 0.1);
  EXPECT_DOUBLE_EQ(r.t_memory_s, 1.0);
  EXPECT_DOUBLE_EQ(r.t_lower_bound_s, 1.0);
  EXPECT_EQ(r.bound(), "memory");
  // 1000 FLOPs, 10 bytes: intensity 100 = ridge; both times 1 s; a tie counts as compute.
  r = roofline({1000, 10}, 1000, 10);
  EXPECT_EQ(r.bound(), "compute");
  EXPECT_DOUBLE_EQ(r.t_lower_bound_s, 1.0);
  EXPECT_EQ(roofline({0, 10}, 1000, 10).bound(), "memory");  // no FLOPs: bytes bound it
  EXPECT_THROW(roofline({1, 1}, 0, 10), kl::BadInput);
  EXPECT_THROW(roofline({1, 1}, 10, 0), kl::BadInput);
}

TEST(Roofline, Formats) {
  EXPECT_EQ(parse_format("fp8e4m3").name, "fp8");
  EXPECT_EQ(parse_format("fp8e4m3").bytes, 1);
  EXPECT_EQ(parse_format("tf32").bytes, 4);  // stored as fp32, runs at the tf32 peak
  EXPECT_EQ(parse_format("tf32").peak_key, "tf32");
  EXPECT_EQ(parse_format("tf32").storage, kl::DType::f32);
  EXPECT_EQ(parse_format("fp64").bytes, 8);
  EXPECT_EQ(parse_format("int8").peak_key, "int8");
  EXPECT_THROW(parse_format("fp7"), kl::BadInput);
}

TEST(GemmQuant, WeightOnlyBytes) {
  // m=16, n=k=8192, bf16 activations, int4 weights, groups of 128:
  // A 16*8192*2 = 262144, C 262144, W 8192*8192/2 = 33554432, scales 64*8192*2 = 1048576.
  kl::Cost c = gemm_weight_only_cost({16, 8192, 8192}, 2, 4, 128);
  EXPECT_EQ(c.flops, 2.0 * 16 * 8192 * 8192);  // 2147483648
  EXPECT_EQ(c.bytes, 262144.0 + 262144 + 33554432 + 1048576);  // 35127296
  // A ragged last group: k=100 in groups of 64 is 2 groups; n=3, int8: W 300 + 2*3*2 = 312,
  // m=1 fp16: A 200, C 6; total 518.
  EXPECT_EQ(gemm_weight_only_cost({1, 3, 100}, 2, 8, 64).bytes, 518);
  EXPECT_EQ(gemm_weight_bytes(100, 3, 8, 64), 312);
  EXPECT_THROW(gemm_weight_only_cost({1, 3, 100}, 2, 3, 64), kl::BadInput);
  EXPECT_THROW(gemm_weight_only_cost({1, 3, 100}, 2, 4, 0), kl::BadInput);
  EXPECT_THROW(gemm_weight_only_cost({0, 3, 100}, 2, 4, 64), kl::BadInput);
}

// The fragment-order rung's block rows: 16 rows of A up to m 16, 64 above; each re-dequantizes all of W.
TEST(GemmQuant, W4DequantizationRepeatsPerBlockRow) {
  EXPECT_EQ(w4_dequantization({1, 64, 128}).block_rows, 16);
  EXPECT_EQ(w4_dequantization({16, 64, 128}).weights, 64.0 * 128);
  EXPECT_EQ(w4_dequantization({17, 64, 128}).block_rows, 64);
  EXPECT_EQ(w4_dequantization({65, 64, 128}).weights, 2.0 * 64 * 128);
  EXPECT_EQ(w4_dequantization({4096, 4096, 4096}).instructions, 64.0 * 4096 * 4096 * 15 / 8);
  EXPECT_THROW(w4_dequantization({0, 64, 128}), kl::BadInput);
}

TEST(GemmQuant, W8A8Bytes) {
  // m=2, n=3, k=4: FLOPs 48; A 8 + W 12 at 1 byte, C 6*2 = 12, scales 4*(2+3) = 20: 52 bytes.
  kl::Cost c = gemm_w8a8_cost({2, 3, 4});
  EXPECT_EQ(c.flops, 48);
  EXPECT_EQ(c.bytes, 52);
}

TEST(GemmQuant, ComputeBoundM) {
  // n=k=100, R=10, e=2, weights 2*100*100 = 20000 bytes: m = 10*20000 / (2*10^4 - 10*2*200) = 12.5.
  // Check: at m=12.5, FLOPs 2*12.5*10^4 = 250000, bytes 2*12.5*200 + 20000 = 25000: intensity 10 = R.
  EXPECT_DOUBLE_EQ(*gemm_compute_bound_m(100, 100, 2, 20000, 10), 12.5);
  // n=k=10, R=10: 2*100 - 10*2*20 < 0: never compute-bound.
  EXPECT_FALSE(gemm_compute_bound_m(10, 10, 2, 200, 10).has_value());
  // n=k=4096 bf16 under the H100 SXM ridge 989.4e12/3.35e12 = 295.343:
  // m* = R*4096 / (4096 - 2R) = 1209726.1 / 3505.313 = 345.11.
  const double ridge = 989.4e12 / 3.35e12;
  EXPECT_NEAR(*gemm_compute_bound_m(4096, 4096, 2, 2.0 * 4096 * 4096, ridge), 345.11, 0.01);
}

TEST(Attention, SmallCaseByHand) {
  // B=2, H=4, Hkv=2, Sq=3, Sk=5, D=8, 2-byte elements.
  AttentionShape s{2, 4, 2, 3, 5, 8, false};
  // FLOPs: 4*2*4*3*5*8 = 3840; backward 2.5x = 9600; causal, bottom-right aligned, FlashAttention-3's
  // (max(0, 5 - 3) + 5) / 2 = 3.5 keys per query: 2688, 6720.
  EXPECT_EQ(attention_flops(s, false), 3840);
  EXPECT_EQ(attention_flops(s, true), 9600);
  AttentionShape c = s;
  c.causal = true;
  EXPECT_EQ(attention_flops(c, false), 2688);
  EXPECT_EQ(attention_flops(c, true), 6720);
  // Elements: Q-sized 2*4*3*8 = 192, K-sized 2*2*5*8 = 160, scores 2*4*3*5 = 120; logsumexp
  // 4 bytes * 2*4*3 = 96 bytes.
  EXPECT_EQ(attention_bytes(s, 2, false, Schedule::flash), (2 * 192 + 2 * 160) * 2);               // 1408
  EXPECT_EQ(attention_bytes(s, 2, true, Schedule::flash), (4 * 192 + 4 * 160) * 2 + 96);           // 2912
  EXPECT_EQ(attention_bytes(s, 2, false, Schedule::naive), (2 * 192 + 2 * 160 + 4 * 120) * 2);     // 2368
  EXPECT_EQ(attention_bytes(s, 2, true, Schedule::naive), (3 * 192 + 4 * 160 + 7 * 120) * 2);      // 4112
  EXPECT_EQ(attention_bytes(c, 2, false, Schedule::naive), attention_bytes(s, 2, false, Schedule::naive));  // S, P full size
}

TEST(Attention, GqaValidation) {
  EXPECT_THROW(validate(AttentionShape{1, 32, 5, 1, 1, 128, false}), kl::BadInput);
  EXPECT_THROW(validate(AttentionShape{1, 32, 8, 0, 1, 128, false}), kl::BadInput);
  EXPECT_THROW(attention_flops(AttentionShape{1, 32, 0, 1, 1, 128, false}, false), kl::BadInput);
  EXPECT_NO_THROW(validate(AttentionShape{1, 32, 1, 1, 1, 128, false}));  // MQA
}

TEST(Attention, DecodeBytesUseKvHeads) {
  // B=1, H=32, Hkv=8, Sq=1, Sk=8192, D=128, bf16. FLOPs 4*32*8192*128 = 134217728.
  // Bytes: Q 32*128*2 = 8192, O 8192, K = V = 8*8192*128*2 = 16777216: 33570816.
  AttentionShape s{1, 32, 8, 1, 8192, 128, false};
  EXPECT_EQ(attention_flops(s, false), 134217728);
  EXPECT_EQ(attention_bytes(s, 2, false, Schedule::flash), 33570816);
  // Intensity 134217728 / 33570816 = 3.998, tending to 2*H*Sq/(Hkv*e) = 2*32/(8*2) = 4.
  EXPECT_DOUBLE_EQ(decode_intensity_limit(s, 2), 4.0);
  // The same model with kv heads = heads (MHA) reads 4x the cache: K = V = 67108864 bytes.
  AttentionShape mha = s;
  mha.kv_heads = 32;
  EXPECT_EQ(attention_bytes(mha, 2, false, Schedule::flash), 2 * 67108864.0 + 16384);
}

TEST(Collective, BusFactorsAndRingBound) {
  EXPECT_DOUBLE_EQ(bus_factor(Collective::allreduce, 8), 1.75);  // 2*7/8
  EXPECT_DOUBLE_EQ(bus_factor(Collective::allgather, 8), 0.875);  // 7/8
  EXPECT_DOUBLE_EQ(bus_factor(Collective::reducescatter, 8), 0.875);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::alltoall, 8), 0.875);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::allreduce, 2), 1.0);
  EXPECT_THROW(bus_factor(Collective::allreduce, 1), kl::BadInput);
  // 1 GiB allreduce over 8 ranks on 450 GB/s per direction: link bytes 2^30 * 1.75 = 1879048192,
  // t = 1879048192 / 450e9 = 4.17566e-3 s, algbw = 2^30 / t = 257.14 GB/s, busbw = 450 GB/s.
  CollectiveBound b = collective_bound(Collective::allreduce, 1073741824.0, 8, 450e9);
  EXPECT_EQ(b.link_bytes, 1879048192.0);
  EXPECT_REL(b.time_s, 4.175662648888889e-3);
  EXPECT_REL(b.algbw, 257.14285714285714e9);
  EXPECT_REL(b.busbw, 450e9);
  EXPECT_EQ(parse_collective("alltoall"), Collective::alltoall);
  EXPECT_FALSE(parse_collective("broadcast").has_value());
}

// ---------------------------------------------------------------- on the database's ceilings

TEST(Analyze, Gemm4096Bf16OnH100Sxm) {
  // FLOPs 2*4096^3 = 1.374e11; bytes 3*4096^2*2 = 1.007e8; intensity 1365.3;
  // ridge 989.4e12 / 3.35e12 = 295.3: compute-bound; t = 1.374e11 / 989.4e12 = 1.389e-4 s.
  Analysis a = analyze(request("gemm", "h100-sxm", {{"m", 4096}, {"n", 4096}, {"k", 4096}}));
  EXPECT_EQ(a.roof.flops, 137438953472.0);
  EXPECT_EQ(a.roof.bytes, 100663296.0);
  EXPECT_NEAR(a.roof.intensity, 1365.33, 0.01);
  EXPECT_NEAR(a.roof.ridge, 295.34, 0.01);
  EXPECT_EQ(a.roof.bound(), "compute");
  EXPECT_REL(a.roof.t_lower_bound_s, 1.3891141446533252e-4);
  EXPECT_REL(a.roof.t_memory_s, 3.0048745074626864e-5);  // 1.007e8 / 3.35e12
  EXPECT_FALSE(a.peak.source.empty());
  EXPECT_FALSE(a.bandwidth.source.empty());
}

TEST(Analyze, GqaDecodeOnH200) {
  // Bytes 33570816 (above), intensity 3.998 against the ridge 989.4e12 / 4.8e12 = 206.1:
  // memory-bound, t = 33570816 / 4.8e12 = 6.994e-6 s (compute would be 1.357e-7 s).
  Analysis a = analyze(request("attention", "h200",
                               {{"batch", 1}, {"heads", 32}, {"kv_heads", 8}, {"seq_q", 1}, {"seq_kv", 8192}, {"head_dim", 128}}));
  EXPECT_EQ(a.roof.bytes, 33570816.0);
  EXPECT_NEAR(a.roof.intensity, 3.998, 0.001);
  EXPECT_DOUBLE_EQ(a.roof.ridge, 206.125);
  EXPECT_EQ(a.roof.bound(), "memory");
  EXPECT_REL(a.roof.t_lower_bound_s, 6.99392e-6);
}

TEST(Analyze, RegistryShapesLargerThanThisMachine) {
  // 10^5 cubed bf16: 2e15 FLOPs and (3 * 10^10) * 2 = 6e10 bytes, more than a CI machine holds;
  // counting it needs no memory.
  Analysis a = analyze(request("gemm", "h100-sxm", {{"m", 100000}, {"n", 100000}, {"k", 100000}}));
  EXPECT_EQ(a.roof.flops, 2e15);
  EXPECT_EQ(a.roof.bytes, 6e10);
}

TEST(Analyze, RmsnormOnA100) {
  // The registry's rmsnorm: 4 FLOPs per element, 4*8192^2 = 268435456; bytes (x read, y written,
  // gamma read) (2*8192^2 + 8192)*2 = 268451840; intensity 0.99994; ridge 312e12 / 2.039e12 =
  // 153.0: memory-bound, t = 268451840 / 2.039e12 = 1.3166e-4 s.
  Analysis a = analyze(request("rmsnorm", "a100-sxm-80gb", {{"rows", 8192}, {"cols", 8192}}));
  EXPECT_EQ(a.roof.flops, 268435456.0);
  EXPECT_EQ(a.roof.bytes, 268451840.0);
  EXPECT_NEAR(a.roof.intensity, 0.99994, 1e-5);
  EXPECT_NEAR(a.roof.ridge, 153.02, 0.01);
  EXPECT_EQ(a.roof.bound(), "memory");
  EXPECT_REL(a.roof.t_lower_bound_s, 1.3165857773418343e-4);
}

TEST(Analyze, AllreduceEightRanksOnH100Sxm) {
  // NVLink 900 GB/s bidirectional: 450e9 per direction; figures as in Collective.BusFactors...
  Analysis a = analyze(request("allreduce", "h100-sxm", {{"bytes", 1 << 30}, {"ranks", 8}}));
  EXPECT_EQ(a.bandwidth_kind, "nvlink");
  EXPECT_EQ(a.roof.flops, 0);
  EXPECT_EQ(a.roof.bytes, 1879048192.0);
  EXPECT_EQ(a.roof.bound(), "memory");
  EXPECT_REL(a.roof.t_lower_bound_s, 4.175662648888889e-3);
  EXPECT_REL(a.extra.at("algbw").get<double>(), 257.14285714285714e9);
  EXPECT_REL(a.extra.at("busbw").get<double>(), 450e9);
  // A part without NVLink falls back to PCIe per direction (L40S: 64 GB/s bidirectional, 32e9).
  Analysis p = analyze(request("allgather", "l40s", {{"bytes", 1 << 30}, {"ranks", 4}}));
  EXPECT_EQ(p.bandwidth_kind, "pcie");
  EXPECT_REL(p.roof.t_lower_bound_s, 1073741824.0 * 0.75 / 32e9);
}

TEST(Analyze, FlashAttentionComputeBoundNaiveNot) {
  // B=1, H=Hkv=16, Sq=Sk=8192, D=128, bf16 on h100-sxm. FLOPs 4*16*8192^2*128 = 5.498e11.
  // Flash bytes: Q, K, V, O of 16*8192*128*2 = 33554432 each: 134217728; intensity 4096 > 295.3:
  // compute-bound, t = 5.498e11 / 989.4e12 = 5.556e-4 s.
  // Naive adds S and P written and read: 4 * 16*8192^2 * 2 = 8589934592: 8724152320 bytes,
  // ratio 65 = 1 + Sk/D... exactly 1 + 4*Sq*Sk*H / (4*H*Sq*D) = 1 + 8192/128; intensity 63.0:
  // memory-bound, t = 8724152320 / 3.35e12 = 2.604e-3 s.
  std::map<std::string, int64_t> dims = {{"batch", 1}, {"heads", 16}, {"seq_q", 8192}, {"seq_kv", 8192}, {"head_dim", 128}};
  Analysis flash = analyze(request("attention", "h100-sxm", dims));
  Analysis naive = analyze(request("attention", "h100-sxm", dims, {"naive"}));
  EXPECT_EQ(flash.roof.flops, 549755813888.0);
  EXPECT_EQ(naive.roof.flops, flash.roof.flops);  // memory traffic saved, not FLOPs
  EXPECT_EQ(flash.roof.bytes, 134217728.0);
  EXPECT_EQ(naive.roof.bytes, 8724152320.0);
  EXPECT_DOUBLE_EQ(naive.roof.bytes / flash.roof.bytes, 65.0);
  EXPECT_EQ(flash.roof.bound(), "compute");
  EXPECT_EQ(naive.roof.bound(), "memory");
  EXPECT_REL(flash.roof.t_lower_bound_s, 5.556456578613301e-4);
  EXPECT_REL(naive.roof.t_lower_bound_s, 2.6042245731343282e-3);
  // Causal: FLOPs exactly half, the flash bytes unchanged.
  Analysis causal = analyze(request("attention", "h100-sxm", dims, {"causal"}));
  EXPECT_EQ(causal.roof.flops, flash.roof.flops / 2);
  EXPECT_EQ(causal.roof.bytes, flash.roof.bytes);
  // A chunk of 2048 queries at the end of 8192 keys, causal: FlashAttention-3's (6144 + 8192) / 2 keys per query.
  std::map<std::string, int64_t> chunk = dims;
  chunk["seq_q"] = 2048;
  EXPECT_EQ(analyze(request("attention", "h100-sxm", chunk, {"causal"})).roof.flops, 4.0 * 16 * 2048 * 7168 * 128);
}

// Peak device memory, Llama-3-70B's attention at 8k (32 query heads, 8 kv heads, d 128, bf16):
// flash holds Q and O (32*8192*128 each), K and V (8*8192*128) and the fp32 LSE; naive adds S and
// P (32*8192^2 each) at once, 52x more; its backward adds P, dP and dS.
TEST(Analyze, AttentionPeakMemoryNaiveAgainstFlash) {
  kl::model::AttentionShape s;
  s.batch = 1, s.heads = 32, s.kv_heads = 8, s.seq_q = 8192, s.seq_kv = 8192, s.head_dim = 128;
  using kl::model::Schedule;
  EXPECT_EQ(kl::model::attention_peak_bytes(s, 2, false, Schedule::flash), 2.0 * (33554432 + 8388608) * 2 + 4.0 * 32 * 8192);
  EXPECT_EQ(kl::model::attention_peak_bytes(s, 2, false, Schedule::naive), 2.0 * (33554432 + 8388608) * 2 + 2.0 * 2147483648 * 2);
  EXPECT_EQ(kl::model::attention_peak_bytes(s, 2, true, Schedule::naive), 4.0 * (33554432 + 8388608) * 2 + 3.0 * 2147483648 * 2);
  EXPECT_EQ(kl::model::attention_peak_bytes(s, 2, true, Schedule::flash),
            4.0 * (33554432 + 8388608) * 2 + 4.0 * 32 * 8192 + 4.0 * 33554432);
}

// explain's attention story: the tensor-core rung's tile (80 KiB at d 128: Q 16 + 2 x (K + V) 32),
// and the backward's recomputation of P (the forward's QK^T, a fifth of the backward's FLOPs at
// s_q = s_kv) against P written and read (2 B*H*Sq*Sk*e bytes).
TEST(Explain, AttentionTilesAndRecomputation) {
  const std::map<std::string, int64_t> dims = {{"batch", 1}, {"heads", 32}, {"kv_heads", 8}, {"seq_q", 8192}, {"seq_kv", 8192}, {"head_dim", 128}};
  const std::string fwd = explain(request("attention", "h200", dims), nullptr);
  EXPECT_THAT(fwd, HasSubstr("Q 16 KiB + 2 stages x (K + V) 32 KiB = 80 KiB per block"));
  EXPECT_THAT(fwd, HasSubstr("64 fp32 registers"));
  const std::string bwd = explain(request("attention", "h200", dims, {"backward"}), nullptr);
  EXPECT_THAT(bwd, HasSubstr("(20% of its"));
  EXPECT_THAT(bwd, HasSubstr("writing and reading " + fmt::format("{:.4g}", 2.0 * 32 * 8192 * 8192 * 2) + " B"));
  EXPECT_THAT(bwd, HasSubstr("K + V 32 KiB + 2 stages x (Q + dO) 32 KiB + dS^T 4 KiB + LSE and D 0.5 KiB = 68.5 KiB per block"));
  EXPECT_THAT(bwd, HasSubstr("Q and dO are read once per 64 keys: 128 x"));
}

// explain decode: at 32k tokens on an H200 the cache read sets the time (8 FLOP/B at group 8, bf16),
// and one block per kv head leaves most SMs idle: split-KV cuts the context into whole tiles.
TEST(Explain, DecodeIsTheCacheReadAndWhySplitKv) {
  const Analysis a = analyze(request("decode", "h200", {{"batch", 1}, {"seq_kv", 32768}, {"heads", 64}, {"kv_heads", 8}}));
  EXPECT_EQ(a.roof.bound(), "memory");
  const double cache = 32768.0 * 8 * 256 * 2;
  EXPECT_GT(a.roof.bytes, cache);
  EXPECT_LT(a.roof.bytes, 1.01 * cache);
  const std::string text = explain(request("decode", "h200", {{"batch", 1}, {"seq_kv", 32768}, {"heads", 64}, {"kv_heads", 8}}), nullptr);
  EXPECT_THAT(text, HasSubstr("at most 8 FLOP/B"));
  EXPECT_THAT(text, HasSubstr("8 blocks for 132 SMs"));
  EXPECT_THAT(text, HasSubstr("into 32 ranges of 1024 (256 blocks)"));
}

TEST(Analyze, QuantizedGemmForms) {
  // Weight-only int4, group 128: 35127296 bytes (GemmQuant.WeightOnlyBytes) at the bf16 peak.
  Analysis w4 = analyze(request("gemm", "h100-sxm", {{"m", 16}, {"n", 8192}, {"k", 8192}, {"weight_bits", 4}}));
  EXPECT_EQ(w4.roof.bytes, 35127296.0);
  EXPECT_EQ(w4.peak.value, 989.4e12);
  // W8A8 int8 4096^3: 4096^2 * (1 + 1 + 2) + 4*8192 = 67141632 bytes at the int8 peak 1978.9e12:
  // intensity 2047, ridge 590.7: compute-bound, t = 1.374e11 / 1978.9e12 = 6.945e-5 s.
  Analysis w8 = analyze(request("gemm", "h100-sxm", {{"m", 4096}, {"n", 4096}, {"k", 4096}}, {}, "int8"));
  EXPECT_EQ(w8.roof.bytes, 67141632.0);
  EXPECT_EQ(w8.roof.bound(), "compute");
  EXPECT_REL(w8.roof.t_lower_bound_s, 137438953472.0 / 1978.9e12);
  // tf32 gemm: the registry's fp32 bytes (3*4096^2*4) at the tf32 peak.
  Analysis tf32 = analyze(request("gemm", "h100-sxm", {{"m", 4096}, {"n", 4096}, {"k", 4096}}, {}, "tf32"));
  EXPECT_EQ(tf32.roof.bytes, 3.0 * 4096 * 4096 * 4);
  EXPECT_EQ(tf32.peak.value, 494.7e12);
}

TEST(Analyze, WeightOnlyPaysExactlyBelowMStar) {
  // n=k=4096 bf16 on h100-sxm: m* = 345.1 (GemmQuant.ComputeBoundM). At m=345 the bf16 gemm is
  // memory-bound and int4 is faster; at m=346 both are compute-bound with equal lower bounds.
  auto at = [](int64_t m, bool quantized) {
    std::map<std::string, int64_t> dims = {{"m", m}, {"n", 4096}, {"k", 4096}};
    if (quantized) dims["weight_bits"] = 4;
    return analyze(request("gemm", "h100-sxm", dims));
  };
  EXPECT_EQ(at(345, false).roof.bound(), "memory");
  EXPECT_LT(at(345, true).roof.t_lower_bound_s, at(345, false).roof.t_lower_bound_s);
  EXPECT_EQ(at(346, false).roof.bound(), "compute");
  EXPECT_EQ(at(346, true).roof.t_lower_bound_s, at(346, false).roof.t_lower_bound_s);
}

TEST(Analyze, RefusesBadRequests) {
  EXPECT_THROW(analyze(request("gemm", "no-such-gpu", {})), kl::BadInput);
  EXPECT_THROW(analyze(request("frobnicate", "h100-sxm", {})), kl::BadInput);
  EXPECT_THROW(analyze(request("gemm", "h100-sxm", {}, {}, "fp7")), kl::BadInput);
  EXPECT_THROW(analyze(request("gemm", "h100-sxm", {{"m", 0}})), kl::BadInput);
  EXPECT_THROW(analyze(request("softmax", "h100-sxm", {{"heads", 4}})), kl::BadInput);   // not its option
  EXPECT_THROW(analyze(request("softmax", "h100-sxm", {}, {"causal"})), kl::BadInput);  // not its switch
  EXPECT_THROW(analyze(request("attention", "h100-sxm", {{"heads", 32}, {"kv_heads", 5}})), kl::BadInput);
  EXPECT_THROW(analyze(request("gemm", "h100-sxm", {{"group_size", 64}})), kl::BadInput);  // without --weight-bits
  EXPECT_THROW(analyze(request("gemm", "h100-sxm", {{"weight_bits", 4}}, {}, "int8")), kl::BadInput);
  EXPECT_THROW(analyze(request("gemm", "a100-sxm-80gb", {}, {}, "fp8")), kl::BadInput);  // Ampere has no fp8
  EXPECT_THROW(analyze(request("allreduce", "h100-sxm", {{"ranks", 1}})), kl::BadInput);
}

TEST(Explain, PlacesMeasuredPointsAgainstTheBound) {
  // The gemm 4096^3 bf16 lower bound on h100-sxm is 1.389e-4 s; a point measured in twice that
  // is at 50.0% of the bound. Points of another op or dtype are left out.
  const double t = 137438953472.0 / 989.4e12;
  nlohmann::json results = {{"points",
                             {{{"op", "gemm"}, {"variant", "v9"}, {"dtype", "bf16"}, {"median_s", 2 * t},
                               {"flops", 137438953472.0}, {"bytes", 100663296.0}, {"device", "NVIDIA H100"}},
                              {{"op", "softmax"}, {"variant", "other"}, {"dtype", "bf16"}, {"median_s", 1.0},
                               {"flops", 1.0}, {"bytes", 1.0}, {"device", "x"}},
                              {{"op", "gemm"}, {"variant", "fp32one"}, {"dtype", "fp32"}, {"median_s", 1.0},
                               {"flops", 1.0}, {"bytes", 1.0}, {"device", "x"}}}}};
  const std::string text = explain(request("gemm", "h100-sxm", {{"m", 4096}, {"n", 4096}, {"k", 4096}}), &results);
  EXPECT_NE(text.find("v9"), std::string::npos) << text;
  EXPECT_NE(text.find("50.0% of the bound"), std::string::npos) << text;
  EXPECT_EQ(text.find("other"), std::string::npos) << text;
  EXPECT_EQ(text.find("fp32one"), std::string::npos) << text;
  const nlohmann::json bad = {{"points", 3}};
  EXPECT_THROW(explain(request("gemm", "h100-sxm", {}), &bad), kl::BadInput);
}

}  // namespace
