// The Device layer: guard zones around every device buffer (on the simulator, which runs the same
// bench/cuda_buffer.h as the CUDA device), the workspace poisoned on every call and guarded, the
// CPU device's timing, and the CUDA device's FLOP ceiling (probe --gpu, else the datasheet by
// device name), all without a GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <thread>

#include "bench/devices.h"
#include "hw/specs.h"
#include "kernelab/device.h"
#include "kernelab/error.h"
#include "kernelab/harness.h"
#include "kernelab/probe.h"
#include "test_sim_util.h"

namespace {

using kl::Backend;
using kl::DType;
using kl::Tensor;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// ---- guards and workspace on the simulator ---------------------------------------------------

#if KERNELAB_HAVE_SIM && KERNELAB_HAVE_SIM_OPS
kl::Device& sim() {
  static kl::DeviceSet set = kl::open_devices({Backend::sim});
  kl::Device* d = kl::find_device(set, Backend::sim);
  if (!d) throw std::runtime_error("no simulator device");
  return *d;
}

__global__ void fill(float* x, int n, float v) {
  for (int i = int(blockIdx.x * blockDim.x + threadIdx.x); i < n; i += int(gridDim.x * blockDim.x)) x[i] = v;
}
__global__ void store_at(float* x, int64_t i) { x[i] = 1.0f; }
__global__ void store_byte(unsigned char* x, int64_t i, unsigned char v) { x[i] = v; }

// An allocated and an uploaded tensor of an odd size (924 bytes: the end is not 256-aligned).
std::vector<Tensor> sim_tensors() {
  Tensor host = Tensor::host(DType::f32, {7, 33});
  host.fill_bytes(0);
  return {sim().allocate({"y", DType::f32, {7, 33}, {}}), sim().upload(host)};
}

TEST(DeviceGuards, InBoundsKernelLeavesTheGuardsIntact) {
  for (Tensor& t : sim_tensors()) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % 256, 0u) << "data 256-byte aligned, as cudaMalloc's";
    ASSERT_EQ(SIM_LAUNCH(fill, 2, 64, 0, t.as<float>(), int(t.numel()), 2.0f), cudaSuccess);
    sim().synchronize();
    EXPECT_TRUE(t.check_guards());
    EXPECT_EQ(sim().download(t).get(t.numel() - 1), 2.0);
  }
}

TEST(DeviceGuards, KernelWritingOnePastTheEndIsCaught) {
  for (Tensor& t : sim_tensors()) {
    ASSERT_EQ(SIM_LAUNCH(store_at, 1, 1, 0, t.as<float>(), t.numel()), cudaSuccess);
    sim().synchronize();
    EXPECT_FALSE(t.check_guards());
  }
}

TEST(DeviceGuards, KernelWritingOneBeforeTheStartIsCaught) {
  for (Tensor& t : sim_tensors()) {
    ASSERT_EQ(SIM_LAUNCH(store_at, 1, 1, 0, t.as<float>(), int64_t{-1}), cudaSuccess);
    sim().synchronize();
    EXPECT_FALSE(t.check_guards());
  }
}

// The harness on the simulator: a transpose rung that also writes one element past either end of
// its output fails the check, naming the out-of-bounds write; the rung itself passes.
TEST(DeviceGuards, CheckVariantCatchesAnOutputWrittenPastEitherEnd) {
  const kl::Op& op = kl::find_op("transpose");
  const kl::Problem p = kl::make_problem(op, DType::f32, {{"rows", 7}, {"cols", 33}});
  const kl::Variant* rung = nullptr;
  for (const kl::Variant& v : op.variants)
    if (v.backend == Backend::cuda && v.runs_on(Backend::sim) && !rung) rung = &v;
  ASSERT_NE(rung, nullptr);
  const kl::Prepared prep = kl::prepare(op, p, 1);
  EXPECT_TRUE(kl::check_variant(op, *rung, rung->configs.front(), prep, sim()).passed);
  for (bool past_end : {true, false}) {
    SCOPED_TRACE(past_end ? "one past the end" : "one before the start");
    kl::Variant planted = *rung;
    planted.configs.front().sim_run = [rung, past_end](const kl::Problem& q, const kl::Args& a) {
      rung->configs.front().sim_run(q, a);
      Tensor& y = a.out[0];
      (void)SIM_LAUNCH(store_at, 1, 1, 0, y.as<float>(), past_end ? y.numel() : int64_t{-1});
    };
    const kl::CheckResult r = kl::check_variant(op, planted, planted.configs.front(), prep, sim());
    EXPECT_FALSE(r.passed);
    EXPECT_THAT(r.failure, HasSubstr("written out of bounds"));
  }
}

TEST(DeviceWorkspace, EveryCallReturnsPoisonedBytes) {
  auto* w = static_cast<unsigned char*>(sim().workspace(300));
  ASSERT_NE(w, nullptr);
  for (int i = 0; i < 300; ++i) ASSERT_EQ(w[i], 0xFF) << "byte " << i;
  std::memset(w, 0, 300);  // the first caller leaves zeros
  auto* again = static_cast<unsigned char*>(sim().workspace(300));
  for (int i = 0; i < 300; ++i) ASSERT_EQ(again[i], 0xFF) << "byte " << i << " kept the last caller's value";
  EXPECT_TRUE(sim().workspace_intact());
  EXPECT_EQ(sim().workspace(0), nullptr);
  EXPECT_TRUE(sim().workspace_intact());
}

TEST(DeviceWorkspace, WritesPastEitherEndAreCaught) {
  // 1000 bytes first, then 100: the trailing guard must sit at 100, where the variant's bytes end.
  for (size_t bytes : {size_t{1000}, size_t{100}}) {
    for (int64_t at : {int64_t(bytes), int64_t{-1}}) {
      SCOPED_TRACE("workspace of " + std::to_string(bytes) + " bytes, write at " + std::to_string(at));
      auto* w = static_cast<unsigned char*>(sim().workspace(bytes));
      ASSERT_EQ(SIM_LAUNCH(store_byte, 1, 1, 0, w, int64_t(bytes) - 1, 0), cudaSuccess);  // the last byte is fine
      EXPECT_TRUE(sim().workspace_intact());
      ASSERT_EQ(SIM_LAUNCH(store_byte, 1, 1, 0, w, at, 0), cudaSuccess);
      sim().synchronize();
      EXPECT_FALSE(sim().workspace_intact());
      sim().workspace(bytes);  // the next variant's workspace: guards intact again
      EXPECT_TRUE(sim().workspace_intact());
    }
  }
}

TEST(DeviceTiming, SimulatorRefusesToTime) {
  EXPECT_THROW(sim().time([] {}), kl::BadInput);
}
#endif

// ---- the CPU device -----------------------------------------------------------------------------

kl::Device& cpu() {
  static kl::DeviceSet set = kl::open_devices({Backend::cpu});
  return *kl::find_device(set, Backend::cpu);
}

TEST(DeviceWorkspace, CpuWorkspaceIsPoisonedAndGuarded) {
  auto* w = static_cast<unsigned char*>(cpu().workspace(100));
  for (int i = 0; i < 100; ++i) ASSERT_EQ(w[i], 0xFF);
  std::memset(w, 0, 100);
  w = static_cast<unsigned char*>(cpu().workspace(100));
  for (int i = 0; i < 100; ++i) ASSERT_EQ(w[i], 0xFF);
  EXPECT_TRUE(cpu().workspace_intact());
  w[100] = 0;  // one past the end
  EXPECT_FALSE(cpu().workspace_intact());
  cpu().workspace(100);
  EXPECT_TRUE(cpu().workspace_intact());
  cpu().workspace(0);
}

TEST(DeviceTiming, CpuDeviceAndHostTimesAreTheWallTime) {
  const kl::Timing t = cpu().time([] { std::this_thread::sleep_for(std::chrono::milliseconds(2)); });
  EXPECT_GE(t.host_s, 0.002);
  EXPECT_EQ(t.device_s, t.host_s);
  EXPECT_FALSE(t.host_bound);
}

// ---- the CUDA device's FLOP ceiling -------------------------------------------------------------

TEST(CudaCeilings, DeviceNamesFindTheirDatabaseEntry) {
  const std::pair<const char*, const char*> known[] = {
      {"NVIDIA H200", "h200"},
      {"NVIDIA H100 80GB HBM3", "h100-sxm"},
      {"NVIDIA H100 PCIe", "h100-pcie"},
      {"NVIDIA A100-SXM4-80GB", "a100-sxm-80gb"},
      {"NVIDIA A100-PCIE-40GB", "a100-pcie-40gb"},
      {"NVIDIA B200", "b200"},
      {"NVIDIA L40S", "l40s"},
      {"NVIDIA L4", "l4"},
      {"NVIDIA GeForce RTX 4090", "rtx4090"},
      {"GeForce RTX 3090", "rtx3090"},  // older drivers drop the NVIDIA
      {"nvidia a10", "a10"},
      {"Tesla T4", "t4"},
  };
  for (auto [name, id] : known) {
    const kl::GpuSpec* g = kl::find_gpu_by_device_name(name);
    ASSERT_NE(g, nullptr) << name;
    EXPECT_EQ(g->id, id) << name;
  }
  // Other parts, even close relatives, are not matched to a datasheet that is not theirs.
  for (const char* other : {"NVIDIA H200 NVL", "NVIDIA H100 NVL", "NVIDIA A100-SXM4-40GB", "NVIDIA A100 80GB PCIe",
                            "NVIDIA L40", "NVIDIA", "", "kernelab SIMT simulator (2 OS threads)"})
    EXPECT_EQ(kl::find_gpu_by_device_name(other), nullptr) << other;
  std::set<std::string> seen;
  for (const kl::GpuSpec& g : kl::gpu_specs()) {
    EXPECT_FALSE(g.device_names.empty()) << g.id;
    for (const std::string& n : g.device_names) {
      EXPECT_TRUE(seen.insert(n).second) << n << " names two entries";
      EXPECT_EQ(kl::find_gpu_by_device_name(n), &g) << n;
    }
  }
}

// KERNELAB_PROBE_FILE pointed into a fresh directory: stored probes are this test's alone.
struct ScratchProbeDir {
  std::filesystem::path dir;
  std::string old;
  bool had_old = false;
  ScratchProbeDir() {
    char tmpl[] = "/tmp/kernelab-probe-XXXXXX";
    dir = mkdtemp(tmpl);
    if (const char* o = getenv("KERNELAB_PROBE_FILE")) old = o, had_old = true;
    setenv("KERNELAB_PROBE_FILE", (dir / "host-ceilings.json").c_str(), 1);
  }
  ~ScratchProbeDir() {
    if (had_old) setenv("KERNELAB_PROBE_FILE", old.c_str(), 1);
    else unsetenv("KERNELAB_PROBE_FILE");
    std::filesystem::remove_all(dir);
  }
};

TEST(CudaCeilings, DatasheetPeakByDeviceNameWhenNothingWasProbed) {
  ScratchProbeDir scratch;
  const kl::Figure h200 = kl::cuda_peak_flops("NVIDIA H200", DType::bf16);
  EXPECT_DOUBLE_EQ(h200.value, 989.4e12);
  EXPECT_THAT(h200.source, StartsWith("datasheet: h200 bf16 dense, NVIDIA H200 Tensor Core GPU datasheet"));
  EXPECT_DOUBLE_EQ(kl::cuda_peak_flops("NVIDIA H100 80GB HBM3", DType::f32).value, 66.9e12);
  const kl::Figure no_fp8 = kl::cuda_peak_flops("NVIDIA A100-SXM4-80GB", DType::e4m3);
  EXPECT_EQ(no_fp8.value, 0);
  EXPECT_THAT(no_fp8.source, HasSubstr("no FLOP ceiling"));
  EXPECT_THAT(no_fp8.source, HasSubstr("fp8"));
  const kl::Figure unknown = kl::cuda_peak_flops("NVIDIA Imaginary X1", DType::bf16);
  EXPECT_EQ(unknown.value, 0);
  EXPECT_THAT(unknown.source, HasSubstr("'NVIDIA Imaginary X1' is not in the hardware database"));
}

TEST(CudaCeilings, ProbedRateWinsForItsGpuAndDtype) {
  ScratchProbeDir scratch;
  kl::GpuCeilings g;
  g.gpu = "NVIDIA H200";
  g.copy_bytes_per_s = 4.0e12;
  g.copy_buffer_bytes = double(1 << 30);
  g.gemm = {{"bf16", 8192, 700e12}, {"fp32", 8192, 50e12}};
  g.measured_at = "2026-01-02T03:04:05Z";
  kl::store_gpu_ceilings(g);
  ASSERT_TRUE(std::filesystem::exists(scratch.dir / "gpu-ceilings.json"));
  const kl::Figure bf16 = kl::cuda_peak_flops("NVIDIA H200", DType::bf16);
  EXPECT_EQ(bf16.value, 700e12);
  EXPECT_THAT(bf16.source,
              StartsWith("measured by kernelab probe --gpu on 2026-01-02T03:04:05Z: cuBLASLt bf16 GEMM 8192^3"));
  EXPECT_EQ(kl::cuda_peak_flops("NVIDIA H200", DType::f32).value, 50e12);
  // fp16 was not probed: the datasheet; another GPU's stored probe is not this one's.
  EXPECT_THAT(kl::cuda_peak_flops("NVIDIA H200", DType::f16).source, StartsWith("datasheet: h200 fp16"));
  EXPECT_THAT(kl::cuda_peak_flops("NVIDIA H100 80GB HBM3", DType::bf16).source, StartsWith("datasheet: h100-sxm bf16"));
  const auto back = kl::load_gpu_ceilings("NVIDIA H200");
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->copy_bytes_per_s, 4.0e12);
  EXPECT_EQ(back->gemm.size(), 2u);
}

}  // namespace

// The host's vector ISA as the CPU rungs meet it (issue 18): the rungs run the best level the CPU
// runs unless told otherwise, and the CPU device names both, so every CPU point says which ran it.
TEST(HostIsa, LevelNoWiderThanTheCpuAndNamedByTheCpuDevice) {
  const kl::HostIsa isa = kl::host_isa();
  const std::vector<std::string> widths = {"generic", "avx2", "avx512"};
  const auto rank = [&](const std::string& w) { return std::find(widths.begin(), widths.end(), w) - widths.begin(); };
  ASSERT_LT(rank(isa.used), 3) << isa.used;
  ASSERT_LT(rank(isa.cpu), 3) << isa.cpu;
  EXPECT_LE(rank(isa.used), rank(isa.cpu));
  EXPECT_FALSE(isa.extensions.empty());
  EXPECT_THAT((std::vector<std::string>{"always", "madvise", "never", "unknown"}), ::testing::Contains(isa.huge_pages));
  kl::DeviceSet set = kl::open_devices({kl::Backend::cpu});
  kl::Device* cpu = kl::find_device(set, kl::Backend::cpu);
  ASSERT_NE(cpu, nullptr);
  EXPECT_THAT(cpu->name(), ::testing::HasSubstr(isa.used + " rungs on an " + isa.cpu + " CPU, THP " + isa.huge_pages));
}
