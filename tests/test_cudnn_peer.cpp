// The cuDNN SDPA peers (src/ops/attention/cuda/v90_cudnn.cu), without a GPU: registered as the peers of
// attention and attention_bwd when the build found cudnn-frontend, refusing what cuDNN refuses with
// cuDNN's reason, and on a machine with no GPU failing with a message, never a crash.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <map>
#include <string>

#include "kernelab/device.h"
#include "kernelab/error.h"
#include "kernelab/op.h"

namespace {

using kl::Backend;
using kl::DType;
using ::testing::HasSubstr;

#ifdef KERNELAB_HAVE_CUDNN_RUNGS
const kl::Variant& peer(const char* op, const char* name) {
  const kl::Variant* v = kl::find_op(op).find_variant(name);
  if (!v) throw std::runtime_error(std::string(op) + " has no variant " + name);
  return *v;
}

kl::Problem attention(const char* op, DType t, int64_t sq, int64_t sk, std::map<std::string, std::string> opts = {}) {
  return kl::make_problem(kl::find_op(op), t,
                          {{"batch", 2}, {"seq_q", sq}, {"seq_kv", sk}, {"heads", 4}, {"kv_heads", 2}, {"head_dim", 64}}, opts);
}
#endif

TEST(CudnnPeer, RegisteredAsThePeerOfAttentionForwardAndBackward) {
#ifndef KERNELAB_HAVE_CUDNN_RUNGS
  GTEST_SKIP() << "this build found no cudnn-frontend: the cuDNN peers are left out";
#else
  for (auto [op, name] : {std::pair{"attention", "cudnn_sdpa"}, std::pair{"attention_bwd", "cudnn_sdpa_bwd"}}) {
    const kl::Variant& v = peer(op, name);
    EXPECT_TRUE(v.peer) << name;
    EXPECT_EQ(v.backend, Backend::cuda) << name;
    EXPECT_EQ(v.source, "attention/cuda/v90_cudnn.cu");
    EXPECT_FALSE(v.runs_on(Backend::sim)) << name << ": cuDNN has no simulator twin";
    EXPECT_EQ(&kl::find_op(op).variants.back(), &v) << name << " ends the ladder";
  }
#endif
}

TEST(CudnnPeer, RefusesWhatCudnnRefusesWithItsReason) {
#ifndef KERNELAB_HAVE_CUDNN_RUNGS
  GTEST_SKIP() << "this build found no cudnn-frontend: the cuDNN peers are left out";
#else
  const kl::Variant& fwd = peer("attention", "cudnn_sdpa");
  const kl::Variant& bwd = peer("attention_bwd", "cudnn_sdpa_bwd");
  const auto reason = [](const kl::Variant& v, const kl::Problem& p) { return v.supports(p).value_or("supported"); };
  EXPECT_THAT(reason(fwd, attention("attention", DType::f32, 33, 127)), HasSubstr("cuDNN SDPA: fp16 and bf16 only"));
  EXPECT_THAT(reason(fwd, attention("attention", DType::bf16, 127, 33, {{"causal", "1"}})), HasSubstr("s_q > s_kv"));
  EXPECT_THAT(reason(bwd, attention("attention_bwd", DType::f16, 127, 33, {{"window", "8"}})), HasSubstr("s_q > s_kv"));
  EXPECT_THAT(reason(bwd, attention("attention_bwd", DType::f16, 1, 1)), HasSubstr("s_q = s_kv = 1"));
  // Taken: GQA, the bottom-right causal mask and windows at s_q <= s_kv, s_q > s_kv unmasked, variable length.
  EXPECT_EQ(reason(fwd, attention("attention", DType::bf16, 33, 127, {{"causal", "1"}, {"window", "16"}})), "supported");
  EXPECT_EQ(reason(bwd, attention("attention_bwd", DType::bf16, 127, 33, {{"deterministic", "1"}})), "supported");
  EXPECT_EQ(reason(fwd, attention("attention", DType::f16, 1, 1)), "supported");
  const kl::Problem varlen =
      kl::make_problem(kl::find_op("attention"), DType::f16, {{"heads", 2}, {"kv_heads", 1}, {"head_dim", 64}},
                       {{"seqlens", "5,1,64"}, {"seqlens_kv", "40,1,128"}, {"causal", "1"}});
  EXPECT_EQ(reason(fwd, varlen), "supported");
#endif
}

TEST(CudnnPeer, WithoutAGpuARunFailsWithAMessage) {
#ifndef KERNELAB_HAVE_CUDNN_RUNGS
  GTEST_SKIP() << "this build found no cudnn-frontend: the cuDNN peers are left out";
#else
  kl::DeviceSet devices = kl::open_devices({Backend::cuda});
  if (kl::find_device(devices, Backend::cuda)) GTEST_SKIP() << "a GPU is present: the device check runs the peers";
  for (auto [op, name] : {std::pair{"attention", "cudnn_sdpa"}, std::pair{"attention_bwd", "cudnn_sdpa_bwd"}}) {
    const kl::Variant& v = peer(op, name);
    const kl::Problem p = attention(op, DType::bf16, 33, 127, {{"causal", "1"}});
    EXPECT_NO_THROW(v.workspace_bytes(p)) << name << ": a graph cuDNN cannot build is reported by run";
    try {
      v.configs.front().run(p, kl::Args{});
      ADD_FAILURE() << name << " ran without a GPU";
    } catch (const kl::RuntimeFailure& e) {
      std::string what = e.what();
      for (char& c : what) c = char(std::tolower(static_cast<unsigned char>(c)));
      EXPECT_THAT(what, HasSubstr("cudnn")) << name << ": " << e.what();
    }
  }
#endif
}

}  // namespace
