// `trace analyze` on real PyTorch profiler traces recorded on A100s (../shared/data/traces, from
// HTA's test data; skipped when that folder is absent). The pinned figures are the ones HTA 0.5.0
// computes on the same files (HTA_DISABLE_NS_ROUNDING=1, whole trace: see docs/trace.md);
// scripts/trace_reference.py checks every other figure independently (ctest trace_reference_real).
#include <gtest/gtest.h>

#include <filesystem>
#include <numeric>

#include "trace/load.h"
#include "trace/report_json.h"

namespace fs = std::filesystem;

namespace {
using namespace kl::trace;

fs::path traces_dir() { return fs::path(KERNELAB_SOURCE_DIR) / ".." / "shared" / "data" / "traces"; }

Report real(const std::string& name) {
  const fs::path p = traces_dir() / name;
  if (!fs::exists(p)) throw std::runtime_error("missing " + p.string());
  return analyze(load_trace_file(p.string()));
}

#define SKIP_WITHOUT_REAL_TRACES() \
  if (!fs::exists(traces_dir())) GTEST_SKIP() << traces_dir() << " is absent"

double us(Ns ns) { return static_cast<double>(ns) / 1000.0; }

TEST(TraceReal, InvariantsOnEveryTrace) {
  SKIP_WITHOUT_REAL_TRACES();
  size_t n = 0;
  for (const auto& entry : fs::directory_iterator(traces_dir())) {
    if (entry.path().extension() != ".gz") continue;
    ++n;
    const Report r = analyze(load_trace_file(entry.path().string()));
    SCOPED_TRACE(entry.path().filename().string());
    EXPECT_TRUE(r.gpu_activity());
    Ns kernel_total = 0;
    for (const KernelStats& k : r.kernels) {
      kernel_total += k.total;
      EXPECT_LE(k.min, k.median);
      EXPECT_LE(k.median, k.p90);
      EXPECT_LE(k.p90, k.max);
    }
    EXPECT_EQ(kernel_total, r.kernel_time());
    for (const auto& [dev, d] : r.devices) {
      EXPECT_GE(d.busy, 0);
      EXPECT_LE(d.busy, d.span());
      EXPECT_LE(d.busy, d.kernel_time + d.memcpy_time + d.memset_time);
    }
    for (const auto& [dev, t] : r.temporal) {
      EXPECT_EQ(t.idle + t.compute + t.non_compute, t.span);
      EXPECT_EQ(t.communication + t.memory + t.other, t.non_compute);
      EXPECT_GE(t.other, 0);
    }
    for (const auto& [dev, u] : r.utilization) {
      const double mean = std::accumulate(u.begin(), u.end(), 0.0) / static_cast<double>(u.size());
      EXPECT_NEAR(mean, static_cast<double>(r.devices.at(dev).busy) / static_cast<double>(r.devices.at(dev).span()), 0.01);
    }
    EXPECT_FALSE(r.findings.empty());
  }
  EXPECT_EQ(n, 5u);
}

TEST(TraceReal, SimpleAddMatchesHta) {
  SKIP_WITHOUT_REAL_TRACES();
  const Report r = real("simple_add_a100.json.gz");
  EXPECT_EQ(r.kernel_count(), 79u);
  const TemporalBreakdown& t = r.temporal.at(0);
  EXPECT_EQ(us(t.span), 16464339.0);
  EXPECT_EQ(us(t.idle), 16414376.0);
  EXPECT_EQ(us(t.compute), 10676.0);  // "Stream Wait Event" cuda_sync events included, as HTA does
  EXPECT_EQ(us(t.non_compute), 39287.0);
  ASSERT_EQ(r.idle.size(), 2u);
  EXPECT_EQ(us(r.idle[0].host_wait), 15976739.0);
  EXPECT_EQ(us(r.idle[0].kernel_wait), 91.0);
  EXPECT_EQ(us(r.idle[1].host_wait), 13582776.0);
  EXPECT_EQ(us(r.idle[1].kernel_wait), 8.0);
  EXPECT_EQ(r.launch.pairs, 98u);
  EXPECT_EQ(*r.launch.median_delay / 1000, 3.5);
  EXPECT_EQ(r.launch.short_ops, 37u);
  EXPECT_FALSE(r.overlap.at(0).ratio().has_value());  // no NCCL kernel: HTA prints NaN
}

TEST(TraceReal, NcclAllreduceMatchesHta) {
  SKIP_WITHOUT_REAL_TRACES();
  const Report r = real("nccl_allreduce.json.gz");
  EXPECT_EQ(r.kernel_count(), 2700u);
  const TemporalBreakdown& t = r.temporal.at(0);
  // HTA sums float microseconds (660551.005633); kernelab sums exact nanoseconds.
  EXPECT_EQ(t.span, 660'551'005);
  EXPECT_EQ(t.idle, 503'050'991);
  EXPECT_EQ(t.compute, 115'655'847);
  EXPECT_EQ(t.non_compute, 41'844'167);
  EXPECT_NEAR(100.0 * *r.overlap.at(0).ratio(), 15.61, 0.005);
  ASSERT_EQ(r.idle.size(), 2u);
  EXPECT_NEAR(us(r.idle[0].host_wait), 540091.32, 0.005);
  EXPECT_NEAR(us(r.idle[0].kernel_wait), 2150.34, 0.005);
  EXPECT_NEAR(us(r.idle[1].host_wait), 583924.26, 0.005);
  EXPECT_EQ(r.launch.pairs, 3774u);
  EXPECT_NEAR(*r.launch.median_delay / 1000, 1.95595, 1e-4);
  EXPECT_EQ(r.launch.short_ops, 2077u);
  const KernelStats& top = r.kernels.front();
  EXPECT_EQ(top.name, "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)");
  EXPECT_EQ(top.type, KernelType::communication);
  EXPECT_EQ(top.total, 46'762'159);
}

}  // namespace
