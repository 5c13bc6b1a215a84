// The hardware database (complete, sourced, self-consistent), the occupancy calculator against
// an independent hand model of the CUDA occupancy rules, and the specs/occupancy commands' exits.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "bad_input.h"
#include "cli_util.h"
#include "hw/occupancy.h"
#include "hw/specs.h"
#include "kernelab/error.h"

namespace {

using kl::ArchLimits;
using kl::GpuSpec;

const std::set<std::string> kIds = {"a100-sxm-80gb", "a100-pcie-40gb", "h100-sxm", "h100-pcie", "h200", "b200",
                                    "l40s",          "l4",             "rtx4090",  "rtx3090",   "a10",  "t4"};

// Figures a part does not have (value 0, source saying "absent"). Everything else must be > 0.
const std::set<std::pair<std::string, std::string>> kAbsent = {
    {"a100-sxm-80gb", "fp8"}, {"a100-sxm-80gb", "fp4"}, {"a100-pcie-40gb", "fp8"}, {"a100-pcie-40gb", "fp4"},
    {"h100-sxm", "fp4"},      {"h100-pcie", "fp4"},     {"h200", "fp4"},           {"l40s", "nvlink"},
    {"l40s", "fp4"},          {"l4", "nvlink"},         {"l4", "fp4"},             {"rtx4090", "nvlink"},
    {"rtx4090", "fp4"},       {"rtx3090", "fp8"},       {"rtx3090", "fp4"},        {"a10", "nvlink"},
    {"a10", "fp8"},           {"a10", "fp4"},           {"t4", "nvlink"},          {"t4", "tf32"},
    {"t4", "bf16"},           {"t4", "fp8"},            {"t4", "fp4"}};

std::vector<std::pair<std::string, const kl::Figure*>> figures(const GpuSpec& g) {
  std::vector<std::pair<std::string, const kl::Figure*>> f = {
      {"sm_count", &g.sm_count},       {"boost_clock", &g.boost_clock_mhz}, {"memory", &g.memory_bytes},
      {"bandwidth", &g.memory_bandwidth}, {"l2", &g.l2_bytes},           {"nvlink", &g.nvlink_bandwidth},
      {"pcie", &g.pcie_bandwidth}};
  for (const std::string& d : kl::peak_dtypes()) f.push_back({d, &g.peak.at(d)});
  return f;
}

int cc(const GpuSpec& g) {
  const ArchLimits& a = kl::find_arch(g.arch);
  return a.cc_major * 10 + a.cc_minor;
}

TEST(HwDatabase, HasExactlyTheTwelveGpus) {
  std::set<std::string> ids;
  for (const GpuSpec& g : kl::gpu_specs()) EXPECT_TRUE(ids.insert(g.id).second) << "duplicate " << g.id;
  EXPECT_EQ(ids, kIds);
  std::set<std::string> archs;
  for (const ArchLimits& a : kl::arch_limits()) archs.insert(a.arch);
  EXPECT_EQ(archs, (std::set<std::string>{"sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"}));
}

TEST(HwDatabase, EveryFigureIsPresentOrDocumentedAbsentAndSourced) {
  for (const GpuSpec& g : kl::gpu_specs()) {
    EXPECT_FALSE(g.name.empty()) << g.id;
    for (const auto& [name, f] : figures(g)) {
      SCOPED_TRACE(g.id + " " + name);
      EXPECT_GT(f->source.size(), 20u);
      if (kAbsent.count({g.id, name})) {
        EXPECT_EQ(f->value, 0);
        EXPECT_NE(f->source.find("absent"), std::string::npos) << f->source;
      } else {
        EXPECT_GT(f->value, 0);
      }
    }
    for (const auto& [name, f] : g.measured) EXPECT_GT(f.value, 0) << g.id << " " << name;
  }
}

// What each generation's tensor cores can do, from the arch alone: the absences above follow it.
TEST(HwDatabase, DtypeSupportFollowsTheArchitecture) {
  for (const GpuSpec& g : kl::gpu_specs()) {
    SCOPED_TRACE(g.id);
    EXPECT_EQ(g.peak.at("fp8").value > 0, cc(g) >= 89);
    EXPECT_EQ(g.peak.at("fp4").value > 0, cc(g) >= 100);
    EXPECT_EQ(g.peak.at("bf16").value > 0, cc(g) >= 80);
    EXPECT_EQ(g.peak.at("tf32").value > 0, cc(g) >= 80);
  }
}

// Catches unit slips and sparse figures entered as dense: FP32 = SMs x lanes x 2 x clock, dense
// tf32 = fp16/2, fp16 = bf16, fp8 = 2 x fp16 where present, each to 2%.
TEST(HwDatabase, FiguresAreMutuallyConsistent) {
  auto near = [](double a, double b) { return std::abs(a - b) <= 0.02 * std::max(a, b); };
  for (const GpuSpec& g : kl::gpu_specs()) {
    SCOPED_TRACE(g.id);
    const int lanes = cc(g) <= 80 ? 64 : 128;  // FP32 lanes per SM: 64 on Turing and GA100
    EXPECT_TRUE(near(g.peak.at("fp32").value, g.sm_count.value * lanes * 2 * g.boost_clock_mhz.value * 1e6));
    const double fp16 = g.peak.at("fp16").value;
    if (g.peak.at("bf16").value > 0) { EXPECT_EQ(g.peak.at("bf16").value, fp16); }
    if (g.peak.at("tf32").value > 0) { EXPECT_TRUE(near(g.peak.at("tf32").value, fp16 / 2)); }
    if (g.peak.at("fp8").value > 0) { EXPECT_TRUE(near(g.peak.at("fp8").value, 2 * fp16)); }
    EXPECT_GT(g.memory_bandwidth.value, 100e9);
    EXPECT_LT(g.memory_bandwidth.value, 10e12);
    EXPECT_GE(g.memory_bytes.value, 16.0 * (1 << 30));
  }
  const GpuSpec& h = kl::find_gpu("h100-sxm");  // unit conversion, against the datasheet
  EXPECT_EQ(h.memory_bytes.value, 80.0 * (1 << 30));
  EXPECT_DOUBLE_EQ(h.memory_bandwidth.value, 3.35e12);
  EXPECT_DOUBLE_EQ(h.peak.at("bf16").value, 989.4e12);
  EXPECT_DOUBLE_EQ(h.nvlink_bandwidth.value, 450e9);
  EXPECT_EQ(h.l2_bytes.value, 50.0 * (1 << 20));
}

TEST(HwDatabase, ArchLimitsAreCompleteAndConsistent) {
  for (const ArchLimits& a : kl::arch_limits()) {
    SCOPED_TRACE(a.arch);
    EXPECT_EQ(a.max_threads_per_sm, 32 * a.max_warps_per_sm);
    EXPECT_EQ(a.max_threads_per_block, 1024);
    EXPECT_EQ(a.regs_per_sm, 65536);
    EXPECT_EQ(a.max_regs_per_thread, 255);
    EXPECT_EQ(a.reg_alloc_unit, 256);
    EXPECT_EQ(a.warp_alloc_granularity, 4);
    EXPECT_GT(a.max_blocks_per_sm, 0);
    EXPECT_EQ(a.reserved_smem_per_block, a.cc_major >= 8 ? 1024 : 0);
    EXPECT_EQ(a.smem_alloc_unit, a.cc_major >= 8 ? 128 : 256);
    EXPECT_LE(a.max_smem_per_block + a.reserved_smem_per_block, a.smem_per_sm);
    EXPECT_GT(a.source.size(), 20u);
    EXPECT_EQ(kl::find_arch(a.arch.substr(3)).arch, a.arch);  // "90" finds sm_90
  }
}

TEST(HwDatabase, EmbeddedJsonIsTheSourceFile) {
  std::ifstream f(std::string(KERNELAB_SOURCE_DIR) + "/src/hw/gpus.json");
  std::stringstream s;
  s << f.rdbuf();
  EXPECT_EQ(kl::gpus_json_text(), s.str()) << "the build embeds a stale gpus.json: re-run cmake";
}

using kl::test::bad_input_message;

TEST(HwDatabase, LookupsNameTheBadValue) {
  std::string m = bad_input_message([] { kl::find_gpu("h100"); });
  EXPECT_NE(m.find("'h100'"), std::string::npos) << m;
  EXPECT_NE(m.find("h100-sxm"), std::string::npos) << m;
  m = bad_input_message([] { kl::find_arch("sm_91"); });
  EXPECT_NE(m.find("sm_91"), std::string::npos) << m;
  EXPECT_NE(m.find("sm_120"), std::string::npos) << m;
}

TEST(HwDatabase, PeakAndBandwidthLookups) {
  const GpuSpec& h = kl::find_gpu("h100-sxm");
  EXPECT_DOUBLE_EQ(kl::gpu_peak(h, "bf16", false).value, 989.4e12);
  EXPECT_DOUBLE_EQ(kl::gpu_peak(h, "fp8e4m3", false).value, 1978.9e12);  // dtype.h names work too
  EXPECT_DOUBLE_EQ(kl::gpu_peak(h, "fp32", false).value, 66.9e12);
  std::string m = bad_input_message([] { kl::gpu_peak(kl::find_gpu("a100-sxm-80gb"), "fp8", false); });
  EXPECT_NE(m.find("a100-sxm-80gb"), std::string::npos) << m;
  EXPECT_NE(m.find("fp8"), std::string::npos) << m;
  m = bad_input_message([&] { kl::gpu_peak(h, "fp7", false); });
  EXPECT_NE(m.find("fp7"), std::string::npos) << m;
  bad_input_message([&] { kl::gpu_peak(h, "int4", false); });
  // Without a measurement, measured=true falls back to the datasheet figure; with one, uses it.
  EXPECT_EQ(kl::gpu_peak(h, "bf16", true).source, h.peak.at("bf16").source);
  EXPECT_EQ(kl::gpu_bandwidth(h, true).value, h.memory_bandwidth.value);
  GpuSpec m2 = h;
  m2.measured["bf16_gemm"] = {700e12, "measured: somewhere"};
  m2.measured["copy_bandwidth"] = {3.0e12, "measured: elsewhere"};
  EXPECT_EQ(kl::gpu_peak(m2, "bf16", true).value, 700e12);
  EXPECT_EQ(kl::gpu_peak(m2, "bf16", false).value, 989.4e12);
  EXPECT_EQ(kl::gpu_bandwidth(m2, true).value, 3.0e12);
  EXPECT_EQ(kl::gpu_bandwidth(m2, false).value, 3.35e12);
}

// ---- occupancy ----------------------------------------------------------------------------

// The CUDA occupancy rules written out from the Occupancy Calculator's formulas, using only
// the database's figures: blocks allowed by warp slots, by registers (registers per warp rounded
// to the allocation unit; warps per SM rounded down to the warp allocation granularity), by
// shared memory (request + reserved, rounded up to the allocation unit), and the block-slot cap.
struct Hand {
  bool refused = false;
  int blocks = 0;
  std::string limiter;
};

Hand hand_occupancy(const ArchLimits& a, int threads, int regs, int64_t smem) {
  auto up = [](int64_t x, int64_t u) { return (x + u - 1) / u * u; };
  if (threads < 1 || threads > a.max_threads_per_block || regs < 0 || regs > a.max_regs_per_thread || smem < 0 ||
      smem > a.max_smem_per_block)
    return {true, 0, {}};
  const int64_t warps = (threads + 31) / 32, reg_per_warp = up(regs * 32, a.reg_alloc_unit);
  if (reg_per_warp * up(warps, a.warp_alloc_granularity) > a.max_regs_per_block) return {true, 0, {}};
  const int64_t by_warps = a.max_warps_per_sm / warps;
  const int64_t by_regs =
      reg_per_warp == 0 ? INT_MAX
                        : a.regs_per_sm / reg_per_warp / a.warp_alloc_granularity * a.warp_alloc_granularity / warps;
  const int64_t smem_alloc = up(smem + a.reserved_smem_per_block, a.smem_alloc_unit);
  const int64_t by_smem = smem_alloc == 0 ? INT_MAX : a.smem_per_sm / smem_alloc;
  const int64_t by_blocks = a.max_blocks_per_sm;
  Hand h;
  h.blocks = static_cast<int>(std::min({by_warps, by_regs, by_smem, by_blocks}));
  h.limiter = h.blocks == by_warps ? "warps" : h.blocks == by_regs ? "registers" : h.blocks == by_smem ? "shared_memory" : "blocks";
  return h;
}

TEST(Occupancy, MatchesTheHandModelOnEveryArchOverASweep) {
  if (!kl::occupancy_available()) GTEST_SKIP() << "built without cuda_occupancy.h";
  std::vector<int> threads = {1, 33, 100, 127, 200, 255, 257, 500, 999, 1023, 1025};
  for (int t = 32; t <= 1024; t += 32) threads.push_back(t);
  const std::vector<int> regs = {0, 16, 17, 24, 31, 32, 33, 40, 48, 56, 63, 64, 65, 72, 80, 96,
                                 100, 127, 128, 129, 160, 168, 200, 232, 254, 255, 256};
  int compared = 0, refused = 0;
  for (const ArchLimits& a : kl::arch_limits()) {
    const int64_t max = a.max_smem_per_block;
    const std::vector<int64_t> smem = {0, 1, 127, 128, 129, 1000, 4096, 12345, 16384, 32768, 49153, 65536,
                                       99 * 1024, 100000, max / 3 + 7, max - 1, max, max + 1};
    for (int t : threads)
      for (int r : regs)
        for (int64_t s : smem) {
          SCOPED_TRACE(fmt::format("{} threads={} regs={} smem={}", a.arch, t, r, s));
          const Hand h = hand_occupancy(a, t, r, s);
          if (h.refused) {
            EXPECT_THROW(kl::compute_occupancy(a, t, r, s), kl::BadInput);
            ++refused;
            continue;
          }
          const kl::Occupancy o = kl::compute_occupancy(a, t, r, s);
          ASSERT_EQ(o.active_blocks_per_sm, h.blocks);
          ASSERT_EQ(o.limiter, h.limiter);
          ASSERT_EQ(o.active_warps_per_sm, h.blocks * ((t + 31) / 32));
          ASSERT_EQ(o.max_warps_per_sm, a.max_warps_per_sm);
          ++compared;
        }
  }
  EXPECT_GT(compared, 50000);
  EXPECT_GT(refused, 5000);
}

struct Classic {
  const char* arch;
  int threads, regs;
  int64_t smem;
  int blocks, warps;
  double occupancy;
  const char* limiter;
};

// Each worked by hand in the comment: (warps/block) -> blocks by warps, registers, smem, cap.
const Classic kClassics[] = {
    // 8 warps: 64/8=8; 1024 regs/warp -> 16/sub-partition -> 64 warps -> 8; 1 KiB reserved -> 164; 32. Tie: warps.
    {"sm_80", 256, 32, 0, 8, 64, 1.0, "warps"},
    // 8 warps: 8; 2048 regs/warp -> 8/sub-partition -> 32 warps -> 4; 164; 32.
    {"sm_80", 256, 64, 0, 4, 32, 0.5, "registers"},
    // 4 warps: 16; 16; (49152+1024)=50176 B -> 167936/50176 = 3; 32.
    {"sm_80", 128, 32, 49152, 3, 12, 0.1875, "shared_memory"},
    // 1 warp: 64; 512 regs/warp -> 128 warps -> 128; 233472/1024 = 228; cap 32.
    {"sm_90", 32, 16, 0, 32, 32, 0.5, "blocks"},
    // 32 warps: 32/32 = 1; 1024 regs/warp -> 64 warps -> 2; no smem; 16.
    {"sm_75", 1024, 32, 0, 1, 32, 1.0, "warps"},
    // 8 warps: 48/8=6; 72x32=2304 regs/warp -> 16384/2304=7 per sub-partition -> 28 warps -> 3; 100; 16.
    {"sm_86", 256, 72, 0, 3, 24, 0.5, "registers"},
    // 3 warps: 21; 33x32=1056 rounds to 1280 -> 12/sub-partition -> 48 warps -> 16 (20 without rounding); 164; 32.
    {"sm_80", 96, 33, 0, 16, 48, 0.75, "registers"},
    // 2 warps: 32; 128 warps -> 64; 7168+1024 reserved = 8192 -> 233472/8192 = 28 (32 without the reservation); 32.
    {"sm_90", 64, 16, 7168, 28, 56, 0.875, "shared_memory"},
    // 4 warps: 16; 16; 54926+1024=55950 rounds to 56064 -> 2 (3 without rounding); 32.
    {"sm_80", 128, 32, 54926, 2, 8, 0.125, "shared_memory"},
    // 32 warps: 2; 2; the 163 KiB opt-in maximum + 1 KiB = 167936 -> 1; 32.
    {"sm_80", 1024, 32, 166912, 1, 32, 0.5, "shared_memory"},
    // 2 warps: 24; 512 regs/warp -> 128 warps -> 64; 100; cap 24 (cuda_occupancy.h's figure for 12.x).
    {"sm_120", 64, 16, 0, 24, 48, 1.0, "warps"},
};

TEST(Occupancy, ClassicCasesWorkedByHand) {
  if (!kl::occupancy_available()) GTEST_SKIP() << "built without cuda_occupancy.h";
  for (const Classic& c : kClassics) {
    SCOPED_TRACE(fmt::format("{} {} {} {}", c.arch, c.threads, c.regs, c.smem));
    const kl::Occupancy o = kl::compute_occupancy(kl::find_arch(c.arch), c.threads, c.regs, c.smem);
    EXPECT_EQ(o.active_blocks_per_sm, c.blocks);
    EXPECT_EQ(o.active_warps_per_sm, c.warps);
    EXPECT_DOUBLE_EQ(o.occupancy, c.occupancy);
    EXPECT_EQ(o.limiter, c.limiter);
  }
}

TEST(Occupancy, RefusedLaunchesNameTheLimit) {
  const ArchLimits& a = kl::find_arch("sm_80");
  auto msg = [&](int t, int r, int64_t s) { return bad_input_message([&] { kl::compute_occupancy(a, t, r, s); }); };
  EXPECT_NE(msg(0, 32, 0).find("positive"), std::string::npos);
  EXPECT_NE(msg(-3, 32, 0).find("-3"), std::string::npos);
  EXPECT_NE(msg(1025, 32, 0).find("1025"), std::string::npos);
  EXPECT_NE(msg(256, 256, 0).find("255"), std::string::npos);
  EXPECT_NE(msg(256, 32, 166913).find("166912"), std::string::npos);
  EXPECT_NE(msg(1024, 65, 0).find("65536"), std::string::npos);  // 2304 regs/warp x 32 warps
  if (kl::occupancy_available()) {
    EXPECT_EQ(kl::compute_occupancy(a, 1024, 64, 0).active_blocks_per_sm, 1);  // exactly 65536 registers
    EXPECT_EQ(kl::compute_occupancy(a, 256, 32, 166912).active_blocks_per_sm, 1);
  }
}

// ---- the commands ---------------------------------------------------------------------------

using kl::test::CliResult;
CliResult run(const std::string& args, const std::string& env = "") { return kl::test::run_kernelab(args, env); }

TEST(HwCli, BadInputsExitTwoNamingTheValue) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"specs nosuch-gpu", "nosuch-gpu"},
      {"occupancy --arch sm_99 --threads 256 --regs 32", "sm_99"},
      {"occupancy --arch sm_80 --threads 0 --regs 32", "positive"},
      {"occupancy --arch sm_80 --threads -1 --regs 32", "-1"},
      {"occupancy --arch sm_80 --threads 2048 --regs 32", "2048"},
      {"occupancy --arch sm_80 --threads 256 --regs 300", "300"},
      {"occupancy --arch sm_80 --threads 256 --regs 32 --smem 200000", "200000"},
      {"occupancy --arch sm_80 --threads 1024 --regs 128", "65536"},
      {"occupancy --arch sm_80 --threads many --regs 32", "many"},
  };
  for (const auto& [args, needle] : cases) {
    const CliResult r = run(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << args << "\n" << r.err;
  }
  const CliResult r = run("specs nosuch-gpu");
  EXPECT_NE(r.err.find("h100-sxm"), std::string::npos) << r.err;  // lists the known ids
}

TEST(HwCli, OccupancyJsonHasTheDesignKeys) {
  if (!kl::occupancy_available()) GTEST_SKIP() << "built without cuda_occupancy.h";
  const CliResult r = run("occupancy --arch sm_80 --threads 256 --regs 32 --smem 0 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* k : {"arch", "threads_per_block", "regs_per_thread", "smem_per_block", "active_blocks_per_sm",
                        "active_warps_per_sm", "max_warps_per_sm", "occupancy", "limiter"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["active_blocks_per_sm"], 8);
  EXPECT_EQ(j["limiter"], "warps");
  const CliResult t = run("occupancy --arch sm_90 --threads 128 --regs 64 --smem 50000");
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("limiter"), std::string::npos) << t.out;
}

TEST(HwCli, SpecsJsonListsEveryGpuWithSources) {
  const CliResult r = run("specs --json", "KERNELAB_PROBE_FILE=/nonexistent/kernelab-probe.json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  std::set<std::string> ids;
  for (const auto& g : j["gpus"]) {
    ids.insert(g["id"].get<std::string>());
    for (const char* k : {"sm_count", "boost_clock_mhz", "memory_bytes", "memory_bandwidth", "l2_bytes",
                          "nvlink_bandwidth", "pcie_bandwidth"}) {
      EXPECT_TRUE(g[k].contains("value")) << g["id"] << " " << k;
      EXPECT_FALSE(g[k]["source"].get<std::string>().empty()) << g["id"] << " " << k;
    }
    for (const auto& [d, f] : g["peak_flops"].items()) EXPECT_FALSE(f["source"].get<std::string>().empty()) << d;
  }
  EXPECT_EQ(ids, kIds);
  EXPECT_EQ(j["archs"].size(), 8u);
  EXPECT_EQ(j["host"]["measured"], false);
  EXPECT_NE(j["host"]["note"].get<std::string>().find("not measured yet: run kernelab probe"), std::string::npos);
}

TEST(HwCli, SpecsShowsTheProbedHost) {
  const std::string path = (std::filesystem::temp_directory_path() / fmt::format("kl-hw-host-{}.json", getpid())).string();
  std::ofstream(path) << nlohmann::json{{"cpu", "Test CPU"},       {"threads", 4},  {"triad_bytes_per_s", 2e10},
                                        {"triad_array_bytes", 5e8}, {"fma_flops_1t", 1e11}, {"fma_flops_all", 4e11},
                                        {"measured_at", "2001-02-03T04:05:06Z"}, {"path", path}}
                             .dump();
  const CliResult r = run("specs host --json", "KERNELAB_PROBE_FILE=" + path);
  std::filesystem::remove(path);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto h = nlohmann::json::parse(r.out)["host"];
  EXPECT_EQ(h["measured"], true);
  EXPECT_EQ(h["memory_bandwidth"]["value"], 2e10);
  EXPECT_EQ(h["peak_flops"]["fp32"]["value"], 4e11);
  EXPECT_EQ(h["memory_bandwidth"]["source"].get<std::string>().rfind("kernelab probe 2001-02-03T04:05:06Z", 0), 0u);
  const CliResult t = run("specs h100-sxm");
  EXPECT_EQ(t.code, 0);
  EXPECT_NE(t.out.find("989.4 TFLOP/s"), std::string::npos) << t.out;
}

}  // namespace
