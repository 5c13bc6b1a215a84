// The experiments' own logic: cost models against hand counts, the pointer-chase input (one cycle
// through every slot), and the shapes each refuses. Their outputs against the float64 reference
// are checked with every other op (Registry/AllVariants on the CPU, SimBackend for CUDA rungs).
#include <gtest/gtest.h>

#include <set>

#include "kernelab/error.h"
#include "kernelab/op.h"
#include "ops/experiments/experiments.h"

namespace {

using kl::DType;

kl::Problem problem(const char* op, std::map<std::string, int64_t> dims, std::map<std::string, std::string> opts = {}) {
  return kl::make_problem(kl::find_op(op), DType::f32, dims, opts, kl::Use::cost_only);
}

TEST(Experiments, CostModelsByHand) {
  EXPECT_EQ(kl::find_op("exp_stride").cost(problem("exp_stride", {{"n", 1024}, {"stride", 8}})).bytes, 8.0 * 1024);
  EXPECT_EQ(kl::find_op("exp_occupancy").cost(problem("exp_occupancy", {{"n", 1000}})).bytes, 8000.0);
  // 1 MiB to read by 2 blocks of 4 KiB chunks: 128 steps; by 3 blocks: ceil(1 MiB / 12 KiB) = 86 steps;
  // 1024 blocks read 4 MiB in one step, more than asked.
  const auto bw = [](int64_t blocks) {
    return kl::find_op("exp_cache_bandwidth").cost(problem("exp_cache_bandwidth", {{"ws_kib", 64}, {"read_mib", 1}, {"blocks", blocks}})).bytes;
  };
  EXPECT_EQ(bw(2), 1 << 20);
  EXPECT_EQ(bw(3), 86.0 * 3 * 4096);
  EXPECT_EQ(bw(1024), 4 << 20);
  const auto chase = [](std::map<std::string, int64_t> dims) { return kl::find_op("exp_cache_latency").cost(problem("exp_cache_latency", dims)).bytes; };
  EXPECT_EQ(chase({{"steps", 100}}), 400.0);
  // Without steps, once around the cycle of 128-byte slots, between 20000 and 2^20 loads.
  EXPECT_EQ(chase({{"ws_kib", 16}}), 4.0 * 20000);
  EXPECT_EQ(chase({{"ws_kib", 4096}}), 4.0 * 32768);
  EXPECT_EQ(chase({{"ws_kib", 262144}}), 4.0 * (1 << 20));
  const kl::Cost banks = kl::find_op("exp_smem_banks").cost(problem("exp_smem_banks", {{"blocks", 2}, {"reps", 10}}));
  EXPECT_EQ(banks.flops, 2.0 * 256 * 10);
  EXPECT_EQ(banks.bytes, 4 * 2.0 * 256 * 10);
  EXPECT_EQ(kl::find_op("exp_divergence").cost(problem("exp_divergence", {{"n", 10}, {"work", 7}, {"paths", 4}})).flops, 140.0);
  const kl::Cost launch = kl::find_op("exp_launch").cost(problem("exp_launch", {{"n", 100}, {"kernels", 3}}));
  EXPECT_EQ(launch.flops, 300.0);
  EXPECT_EQ(launch.bytes, 2400.0);
}

TEST(Experiments, ChaseIsOneCycleThroughEverySlot) {
  for (int64_t ws_kib : {1, 3, 64}) {
    const kl::Problem p = problem("exp_cache_latency", {{"ws_kib", ws_kib}});
    const kl::TensorSpec spec = kl::find_op("exp_cache_latency").inputs(p).at(0);
    ASSERT_TRUE(static_cast<bool>(spec.fill));
    kl::Tensor x = kl::Tensor::host(spec.dtype, spec.shape);
    spec.fill(x, 42 + static_cast<uint64_t>(ws_kib));
    const auto* words = static_cast<const uint32_t*>(x.data());
    const int64_t slots = ws_kib * 1024 / 128;
    std::set<uint32_t> seen;
    uint32_t at = 0;
    for (int64_t k = 0; k < slots; ++k) {
      ASSERT_EQ(at % kl::kChaseSlotFloats, 0u);
      ASSERT_LT(at / kl::kChaseSlotFloats, static_cast<uint32_t>(slots));
      seen.insert(at);
      at = words[at];
    }
    EXPECT_EQ(at, 0u) << "back at the start after every slot";
    EXPECT_EQ(static_cast<int64_t>(seen.size()), slots);
  }
}

TEST(Experiments, ImpossibleShapesAreRefused) {
  auto refused = [](const char* op, std::map<std::string, int64_t> dims, std::map<std::string, std::string> opts, const char* text) {
    try {
      problem(op, dims, opts);
      ADD_FAILURE() << op << " accepted";
    } catch (const kl::BadInput& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  refused("exp_stride", {{"n", 1000}, {"stride", 3}}, {}, "multiple of bytes/4 x stride = 3");
  refused("exp_stride", {{"n", 6}}, {{"bytes", "16"}}, "multiple of bytes/4 x stride = 4");
  refused("exp_stride", {{"n", 4}}, {{"bytes", "12"}}, "not one of: 4, 8, 16");
  refused("exp_occupancy", {{"threads", 100}}, {}, "multiple of 32");
  refused("exp_occupancy", {{"threads", 2048}}, {}, "at most 1024");
  refused("exp_smem_banks", {{"stride", 33}}, {}, "over 32");
  refused("exp_divergence", {{"paths", 33}}, {}, "over 32");
  refused("exp_cache_latency", {{"ws_kib", int64_t{1} << 22}}, {}, "over 2 GiB");
  refused("exp_cache_bandwidth", {{"ws_kib", 6}}, {}, "not a multiple of 4");
  refused("exp_launch", {{"kernels", 0}}, {}, "must be positive");
}

}  // namespace
