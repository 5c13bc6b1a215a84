// Every CUDA rung in the simulator, one test per (op, rung) so ctest runs them side by side:
// every config on every check case against the float64 reference with the race check on (each
// launch run with the threads between barriers forward and reversed; a difference fails the
// case; the 1000 x 1000 shapes and the bf16 cases unraced unless they launch a kernel no raced
// case did, a bf16 kernel's fp16 twin counting as it), again on outputs shifted off 16-byte
// boundaries (the head and scalar paths the aligned harness buffers never take; unraced on the
// same rule), reduce max over negative and mixed-sign inputs; and every kernel a config
// declares is launched somewhere in that sweep, so that the static claims (test_cuda_static.cpp),
// made on the declared kernels, describe code that runs. Planted: a config that leaves out a
// kernel it launches fails the check; a rung with a missing barrier fails (test_user_rung.cpp).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <ostream>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "kernelab/device.h"
#include "kernelab/harness.h"
#include "kernelab/launch_log.h"
#include "kernelab/op.h"
#include "kernelab/rng.h"
#include "kernelab/tensor.h"
#ifdef KERNELAB_HAVE_SIM_OPS
#include "sim/launch.h"
#endif

namespace {

using kl::Backend;
using kl::DType;
using kl::Tensor;
using ::testing::HasSubstr;

struct RungCase {
  std::string op, variant;
};

std::vector<RungCase> cuda_rungs() {
  std::vector<RungCase> out;
  for (const kl::Op& op : kl::registry())
    for (const kl::Variant& v : op.variants)
      if (v.backend == Backend::cuda && !(v.peer && !v.runs_on(Backend::sim)))  // cuDNN's peers have no simulator twin
        out.push_back({op.name, v.name});
  return out;
}

#ifdef KERNELAB_HAVE_SIM_OPS
kl::Device& sim() {
  static kl::DeviceSet set = kl::open_devices({Backend::sim});
  kl::Device* d = kl::find_device(set, Backend::sim);
  if (!d) throw std::runtime_error("no simulator device");
  return *d;
}

// A device tensor of `spec`'s shape starting `shift` elements past a 256-byte aligned allocation
// filled with poison; `whole` is that allocation.
struct Shifted {
  Tensor view, whole;
};
Shifted shifted_output(const kl::TensorSpec& spec, int shift) {
  Tensor host = Tensor::host(spec.dtype, spec.shape);
  const size_t e = kl::dtype_bits(spec.dtype) / 8;
  Tensor big = Tensor::host(spec.dtype, {host.numel() + shift + 8});
  big.poison();
  Shifted s;
  s.whole = sim().upload(big);
  auto buf = std::make_shared<kl::Buffer>();
  buf->data = buf->base = static_cast<std::byte*>(s.whole.data()) + shift * e;
  buf->bytes = host.nbytes();
  buf->where = kl::Where::device;
  buf->release = [keep = s.whole](std::byte*) {};  // the view keeps its allocation alive
  s.view = Tensor::wrap(spec.dtype, spec.shape, host.strides(), buf);
  return s;
}

// Runs config c of v on p with every output shifted by `shift` elements; the kernels it launched.
std::vector<const void*> run_shifted(const kl::Op& op, const kl::Variant& v, const kl::Config& c, const kl::Prepared& prep, int shift) {
  const kl::Problem& p = prep.problem;
  std::vector<Tensor> in, out;
  std::vector<Shifted> held;
  for (const Tensor& t : prep.host_in) in.push_back(sim().upload(t));
  for (const kl::TensorSpec& spec : op.outputs(p)) {
    held.push_back(shifted_output(spec, shift));
    out.push_back(held.back().view);
  }
  kl::Args a{in, out, sim().workspace(v.workspace_bytes(p)), sim().stream()};
  kl::LaunchLog log;
  try {
    c.sim_run(p, a);
    sim().synchronize();
  } catch (const std::exception& e) {  // a fault, a deadlock, a refused launch
    ADD_FAILURE() << e.what();
    return {};
  }
  for (size_t i = 0; i < out.size(); ++i) {
    const Tensor got = sim().download(out[i]);
    EXPECT_LE(kl::output_error(op, prep, i, got), kl::check_tolerance(op, v, prep)) << "output " << i;
    const Tensor whole = sim().download(held[i].whole);  // around the output: still poison (NaN never equals itself)
    for (int64_t j = 0; j < whole.numel(); ++j)
      if (j < shift || j >= shift + got.numel()) { EXPECT_TRUE(std::isnan(whole.get(j))) << "wrote element " << j << " of output " << i; }
  }
  return log.kernels();
}

// The race check on for one test's duration.
struct RaceCheckOn {
  bool was = kl::sim::options().race_check;
  RaceCheckOn() { kl::sim::options().race_check = true; }
  ~RaceCheckOn() { kl::sim::options().race_check = was; }
};

int64_t output_elements(const kl::Op& op, const kl::Problem& p) {
  int64_t n = 0;
  for (const kl::TensorSpec& t : op.outputs(p))
    n += std::accumulate(t.shape.begin(), t.shape.end(), int64_t{1}, std::multiplies<>());
  return n;
}

// "softmax_warp<__half, 8, 8>" for "softmax_warp<__nv_bfloat16, 8, 8>": the kernel a bf16 one
// shares its memory accesses with.
std::string race_twin(std::string kernel) {
  const std::string bf16 = "__nv_bfloat16";
  for (size_t at; (at = kernel.find(bf16)) != std::string::npos;) kernel.replace(at, bf16.size(), "__half");
  return kernel;
}

std::string name_of(const kl::Config& c, const void* k) {
  for (const kl::KernelGroup& g : c.kernels)
    for (const kl::KernelRef& r : g.kernels)
      if (r.sim == k) return r.name;
  return "an undeclared kernel";
}
#endif

constexpr int64_t kRacedElements = int64_t{1} << 19;

// The fused op's rungs run simulator programs built by `sim run` (src/ops/fused/generated.cpp):
// in this test binary, into the build folder's cache that the CLI tests use, so that a program
// both run (the preset expressions) compiles once; concurrent builds of one program wait for the
// first (src/sim/run/driver.cpp). Unless the environment names a cache.
struct SharedSimCache : ::testing::Environment {
  void SetUp() override {
    const auto cache = std::filesystem::path(KERNELAB_BINARY).parent_path() / "sim-cache";
    setenv("KERNELAB_SIM_CACHE", cache.c_str(), 0);
  }
};
[[maybe_unused]] ::testing::Environment* const kSharedSimCache = ::testing::AddGlobalTestEnvironment(new SharedSimCache);

class SimRung : public ::testing::TestWithParam<RungCase> {};

TEST_P(SimRung, EveryConfigPassesAndLaunchesEveryKernelItDeclares) {
#ifndef KERNELAB_HAVE_SIM_OPS
  GTEST_SKIP() << "this build has no simulator";
#else
  const kl::Op& op = kl::find_op(GetParam().op);
  const kl::Variant& v = *op.find_variant(GetParam().variant);
  ASSERT_TRUE(v.runs_on(Backend::sim)) << "no simulator build";
  const RaceCheckOn race_check;
  std::map<std::string, std::set<std::string>> launched;  // config -> kernel names
  uint64_t seed = 7 + std::hash<std::string>{}(v.name) % 1000;
  int checked = 0;
  std::vector<kl::Problem> problems = op.check_cases(op);
  if (op.name == "reduce")  // max over negative and mixed-sign inputs: the int-ordering atomic, -inf identities
    for (const char* over : {"rows", "total"})
      for (DType t : {DType::f32, DType::f16})
        for (auto [r, c] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {7, 33}, {3, 1000}, {65, 130}})
          problems.push_back(kl::make_problem(op, t, {{"rows", r}, {"cols", c}}, {{"mode", "max"}, {"over", over}}));
  if (op.name == "reduce")  // rows longer than a warp takes (1024): the block-per-row paths
    for (const char* mode : {"sum", "max"})
      for (DType t : {DType::f32, DType::f16, DType::bf16})
        problems.push_back(kl::make_problem(op, t, {{"rows", 3}, {"cols", 2000}}, {{"mode", mode}, {"over", "rows"}}));
  // The 1000 x 1000 row-wise shapes, the bf16 cases and the runs on shifted outputs go without the
  // race check, unless they launch a kernel no raced run of the config has (a bf16 kernel counting
  // as raced when its fp16 twin was): their blocks are ones already raced, over more rows, storing
  // to other addresses, or, in bf16, with the fp16 kernel's loads, stores and barriers and other
  // arithmetic. Racing them was half of the test.
  std::map<std::string, std::set<std::string>> raced;  // config -> kernels a raced run launched, as race_twin names them
  const auto checked_raced = [&](const kl::Config& c, bool race, const auto& run) {
    kl::sim::options().race_check = race;
    std::vector<std::string> names = run();
    const auto twin_raced = [&](const std::string& k) { return raced[c.name].count(race_twin(k)) > 0; };
    if (!race && !std::all_of(names.begin(), names.end(), twin_raced)) {
      kl::sim::options().race_check = race = true;
      names = run();
    }
    if (race)
      for (const std::string& k : names) raced[c.name].insert(race_twin(k));
    launched[c.name].insert(names.begin(), names.end());
  };
  for (const kl::Problem& p : problems) {
    const int64_t elements = output_elements(op, p);
    const bool large = elements > kRacedElements, bf16 = p.dtype == DType::bf16;
    std::optional<kl::Prepared> prep;
    for (const kl::Config& c : v.configs) {
      if (v.supports_config(p, c)) continue;
      if (!prep) {
        prep = kl::prepare(op, p, seed++);
        if (op.name == "reduce" && p.opt("mode") == "max")  // shift half the inputs below zero
          for (Tensor& t : prep->host_in)
            for (int64_t i = 0; i < t.numel(); i += 2) t.set(i, -t.get(i) - 0.001);
        if (op.name == "reduce" && p.opt("mode") == "max") prep->ref = op.reference(p, prep->host_in);
      }
      SCOPED_TRACE(v.name + " " + c.name + " " + p.label() + " " + std::string(kl::dtype_name(p.dtype)));
      checked_raced(c, !large && !bf16, [&] {
        const kl::CheckResult r = kl::check_variant(op, v, c, *prep, sim());
        EXPECT_TRUE(r.passed) << r.failure;
        return r.launched;
      });
      ++checked;
      if (!op.experiment && elements <= 4096)  // outputs off 16-byte boundaries: the small shapes
        for (int shift : {1, 3})
          checked_raced(c, false, [&] {
            std::vector<std::string> names;
            for (const void* k : run_shifted(op, v, c, *prep, shift)) names.push_back(name_of(c, k));
            return names;
          });
    }
  }
  EXPECT_GT(checked, 0);
  for (const kl::Config& c : v.configs) {
    EXPECT_EQ(launched[c.name].count("an undeclared kernel"), 0u) << c.name;
    for (const kl::KernelGroup& g : c.kernels)
      for (const kl::KernelRef& k : g.kernels)
        EXPECT_EQ(launched[c.name].count(k.name), 1u) << "config " << c.name << " declares " << k.name
                                                      << " but no case of the sweep launched it";
  }
#endif
}

void PrintTo(const RungCase& c, std::ostream* os) { *os << c.op << " " << c.variant; }

INSTANTIATE_TEST_SUITE_P(Registry, SimRung, ::testing::ValuesIn(cuda_rungs()), [](const auto& info) {
  return info.param.op + "_" + info.param.variant;
});

TEST(SimRungLaunches, SoftmaxV04TakesItsVectorKernelOnAlignedRowsAndItsScalarOneOtherwise) {
#ifndef KERNELAB_HAVE_SIM_OPS
  GTEST_SKIP() << "this build has no simulator";
#else
  const kl::Op& op = kl::find_op("softmax");
  const kl::Variant& v = *op.find_variant("cuda_warp_vectorized");
  const kl::Config& c = v.config("8_rows_per_block");
  for (int64_t cols : {1000, 7}) {  // 4000-byte rows: every row aligned; 28-byte rows: a head and a tail per row
    const kl::Prepared prep = kl::prepare(op, kl::make_problem(op, DType::f32, {{"rows", 9}, {"cols", cols}}), 11);
    const kl::CheckResult r = kl::check_variant(op, v, c, prep, sim());
    EXPECT_TRUE(r.passed) << r.failure;
    EXPECT_EQ(r.launched, (std::vector<std::string>{"softmax_warp<float, 4, 8>"})) << cols;
    const auto shifted = run_shifted(op, v, c, prep, 1);  // y one element off x's alignment
    ASSERT_EQ(shifted.size(), 1u);
    EXPECT_EQ(name_of(c, shifted[0]), "softmax_warp<float, 1, 8>");
  }
#endif
}

TEST(SimRungLaunches, AConfigThatLeavesOutAKernelItLaunchesFails) {
#ifndef KERNELAB_HAVE_SIM_OPS
  GTEST_SKIP() << "this build has no simulator";
#else
  const kl::Op& op = kl::find_op("softmax");
  kl::Variant v = *op.find_variant("cuda_warp_vectorized");
  kl::Config& c = v.configs.front();
  ASSERT_EQ(c.kernels.size(), 2u);
  c.kernels.erase(c.kernels.begin());  // the vector group: its claims would then describe only the scalar kernels
  const kl::Prepared prep = kl::prepare(op, kl::make_problem(op, DType::f32, {{"rows", 9}, {"cols", 64}}), 12);
  const kl::CheckResult r = kl::check_variant(op, v, c, prep, sim());
  EXPECT_FALSE(r.passed);
  EXPECT_THAT(r.failure, HasSubstr("does not declare"));
#endif
}

}  // namespace
