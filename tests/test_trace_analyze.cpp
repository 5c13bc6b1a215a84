// `trace analyze` on the project's own small traces (tests/data/traces), every figure computed by
// hand from the events listed in the file. two_streams.json, in us:
//   stream 7:  gemm [20,50) gemm [52,62) memcpy [62,70) relu [115,120) memset [160,162)
//              and a cuda_sync "Stream Sync" [120,160) (not a GPU op; HTA's temporal counts it)
//   stream 20: ncclKernel [40,70)
//   launch calls (start, end): c1 (5,15) c2 (20,25) c3 memcpy (26,30) c5 nccl (31,35)
//                              c7 memset (36,38) c4 (100,110); cudaStreamSynchronize (110,170)
#include <gtest/gtest.h>

#include <string>

#include "kernelab/error.h"
#include "trace/gpu_metrics.h"
#include "trace/load.h"
#include "trace/memory.h"
#include "trace/report_json.h"
#include "trace/steps.h"

namespace {
using namespace kl::trace;

std::string data(const std::string& name) { return std::string(KERNELAB_SOURCE_DIR).append("/tests/data/traces/").append(name); }

Report two_streams(const std::string& file = "two_streams.json") {
  AnalyzeOptions opt;
  opt.gap_us = 30;
  opt.chunks = 2;
  return analyze(load_trace_file(data(file)), opt);
}

TEST(TraceAnalyze, DeviceSummary) {
  const Report r = two_streams();
  ASSERT_EQ(r.devices.size(), 1u);
  const DeviceSummary& d = r.devices.at(0);
  // GPU ops merge to [20,70) [115,120) [160,162): busy 50 + 5 + 2; span 162 - 20.
  EXPECT_EQ(d.span(), 142'000);
  EXPECT_EQ(d.busy, 57'000);
  EXPECT_EQ(d.idle(), 85'000);
  EXPECT_EQ(d.kernels, 4u);
  EXPECT_EQ(d.kernel_time, 75'000);  // 30 + 10 + 5 + 30
  EXPECT_EQ(d.memcpys, 1u);
  EXPECT_EQ(d.memcpy_time, 8'000);
  EXPECT_EQ(d.memcpy_bytes, 4096);
  EXPECT_EQ(d.memsets, 1u);
  EXPECT_EQ(d.memset_bytes, 512);
  EXPECT_EQ(d.pageable_memcpys, 1u);
  EXPECT_EQ(r.device_names.at(0), "Test GPU");
  EXPECT_EQ(r.events, 18u);
}

TEST(TraceAnalyze, KernelBreakdown) {
  const Report r = two_streams();
  ASSERT_EQ(r.kernels.size(), 3u);
  const KernelStats& g = r.kernels[0];
  EXPECT_EQ(g.name, "gemm_kernel");
  EXPECT_EQ(g.count, 2u);
  EXPECT_EQ(g.total, 40'000);
  EXPECT_DOUBLE_EQ(g.mean, 20'000);
  EXPECT_DOUBLE_EQ(g.median, 20'000);
  EXPECT_DOUBLE_EQ(g.p90, 28'000);  // 10 + 0.9 * (30 - 10)
  EXPECT_EQ(r.kernels[1].name, "ncclKernel_AllReduce_RING_LL_Sum_float");
  EXPECT_EQ(r.kernels[1].type, KernelType::communication);
  EXPECT_EQ(r.kernels[2].name, "relu_kernel");
}

TEST(TraceAnalyze, TemporalBreakdownFollowsHta) {
  const TemporalBreakdown t = two_streams().temporal.at(0);
  // With the Stream Sync [120,160): union [20,70) [115,162) = 97 of a 142 span.
  EXPECT_EQ(t.span, 142'000);
  EXPECT_EQ(t.idle, 45'000);
  EXPECT_EQ(t.compute, 45'000);          // [20,50) [52,62) [115,120)
  EXPECT_EQ(t.non_compute, 52'000);      // 142 - 45 - 45
  EXPECT_EQ(t.communication, 10'000);    // nccl [40,70) outside compute: [50,52) [62,70)
  EXPECT_EQ(t.memory, 2'000);            // memcpy sits under nccl; memset [160,162)
  EXPECT_EQ(t.other, 40'000);            // "Stream Sync": HTA types names containing Sync as other
}

TEST(TraceAnalyze, IdleBreakdownPerStream) {
  const Report r = two_streams();
  ASSERT_EQ(r.idle.size(), 2u);
  const StreamIdle& s7 = r.idle[0];
  EXPECT_EQ(s7.stream, 7);
  // Gaps 2 (c2 started at 20 < 50: kernel wait), 0 (kernel wait), 45 (c4 started at 100 > 70:
  // host wait), 40 (c7 started at 36 < 120, 40 >= 30: other).
  EXPECT_EQ(s7.kernel_wait, 2'000);
  EXPECT_EQ(s7.kernel_wait_gaps, 2u);
  EXPECT_EQ(s7.host_wait, 45'000);
  EXPECT_EQ(s7.other, 40'000);
  const StreamIdle& s20 = r.idle[1];
  EXPECT_EQ(s20.stream, 20);
  EXPECT_EQ(s20.total(), 0);  // one op: no gap
}

TEST(TraceAnalyze, KernelWaitThresholdMovesGapsBetweenCategories) {
  AnalyzeOptions opt;
  opt.kernel_wait_us = 41;  // the 40 us gap becomes kernel wait
  const Report r = analyze(load_trace_file(data("two_streams.json")), opt);
  EXPECT_EQ(r.idle[0].kernel_wait, 42'000);
  EXPECT_EQ(r.idle[0].other, 0);
}

TEST(TraceAnalyze, LaunchStatistics) {
  const LaunchStats L = two_streams().launch;
  // Delays 5, 27, 32, 5 (relu), 5 (nccl), 122 (memset at 160, call ended at 38).
  EXPECT_EQ(L.pairs, 6u);
  EXPECT_DOUBLE_EQ(*L.median_delay, 16'000);  // (5 + 27) / 2
  EXPECT_DOUBLE_EQ(*L.p90_delay, 77'000);     // 32 + 0.5 * (122 - 32)
  EXPECT_EQ(L.max_delay, 122'000);
  EXPECT_EQ(L.delay_over_100us, 1u);
  EXPECT_EQ(L.kernels, 4u);
  EXPECT_EQ(L.short_kernels, 1u);  // relu: 5 us on the GPU, 10 us to launch
  EXPECT_EQ(L.short_ops, 1u);
  EXPECT_EQ(L.short_kernel_gpu, 5'000);
  EXPECT_EQ(L.short_kernel_cpu, 10'000);
  // relu's launch (100) began after the memcpy before it on stream 7 ended (70): the GPU waited 45 us.
  EXPECT_EQ(L.short_kernels_waited, 1u);
  EXPECT_EQ(L.short_waited_gap, 45'000);
}

TEST(TraceAnalyze, SyncOverlapGapsUtilisation) {
  const Report r = two_streams();
  ASSERT_EQ(r.sync.size(), 1u);
  EXPECT_EQ(r.sync.at("cudaStreamSynchronize").calls, 1u);
  EXPECT_EQ(r.sync.at("cudaStreamSynchronize").blocked, 60'000);
  const Overlap o = r.overlap.at(0);
  EXPECT_EQ(o.communication, 30'000);
  EXPECT_EQ(o.overlapped, 20'000);  // [40,50) and [52,62)
  EXPECT_NEAR(*o.ratio(), 2.0 / 3.0, 1e-12);
  // Gaps over 30 us: [70,115) and [120,160).
  EXPECT_EQ(r.gap_stats.at(0).count, 2u);
  EXPECT_EQ(r.gap_stats.at(0).total, 85'000);
  ASSERT_EQ(r.gaps.size(), 2u);
  EXPECT_EQ(r.gaps[0].start, 50'000);
  EXPECT_EQ(r.gaps[0].dur, 45'000);
  EXPECT_EQ(r.gaps[0].cpu_busy, 15'000);  // c4 [100,110) and the sync from 110
  ASSERT_EQ(r.gaps[0].cpu.size(), 2u);
  EXPECT_EQ(r.gaps[0].cpu[0].name, "cudaLaunchKernel");
  EXPECT_EQ(r.gaps[0].cpu[0].overlap, 10'000);
  EXPECT_EQ(r.gaps[1].cpu[0].name, "cudaStreamSynchronize");
  // Chunks [20,91) and [91,162): busy 50 and 7 of 71 each.
  const auto& u = r.utilization.at(0);
  ASSERT_EQ(u.size(), 2u);
  EXPECT_DOUBLE_EQ(u[0], 50.0 / 71.0);
  EXPECT_DOUBLE_EQ(u[1], 7.0 / 71.0);
}

TEST(TraceAnalyze, FindingsRankedByTimeAtStake) {
  const Report r = two_streams();
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings[0].kind, "idle");
  EXPECT_NE(r.findings[0].text.find("idle 60% of its span"), std::string::npos) << r.findings[0].text;
  EXPECT_NE(r.findings[0].text.find("52% is host wait"), std::string::npos) << r.findings[0].text;
  for (size_t i = 1; i < r.findings.size(); ++i) EXPECT_GE(r.findings[i - 1].impact, r.findings[i].impact);
}

// slow_calls.json, in us: cudaGetDeviceCount [0,5000) (the first call); a "warmup" annotation
// [5000,9000) holding cudaLaunchKernel [5100,7100) -> k_warm [7200,7210) and cudaMalloc
// [7300,8800); a "measure" annotation [9000,10500) holding launches at 9010 -> k_main
// [9020,10400) and 9100 -> k_tail [10400,10402) (5 us each) and cudaStreamSynchronize
// [9110,10402), over 1 ms but covered by the kernels: the GPU's time, not the driver's.
TEST(TraceAnalyze, SlowApiCallsWithTheGpuIdleAreDriverTimeNotLaunchOverhead) {
  const Report r = analyze(load_trace_file(data("slow_calls.json")));
  const SlowCalls& s = r.slow_calls;
  EXPECT_EQ(s.calls, 3u);
  EXPECT_EQ(s.total, 8'500'000);
  ASSERT_EQ(s.longest.size(), 3u);
  EXPECT_EQ(s.longest[0].name, "cudaGetDeviceCount");
  EXPECT_NE(s.longest[0].why.find("first CUDA call"), std::string::npos) << s.longest[0].why;
  EXPECT_EQ(s.longest[0].from_first_gpu_op, -7'200'000);
  EXPECT_NE(s.longest[1].why.find("module"), std::string::npos) << s.longest[1].why;
  EXPECT_NE(s.longest[2].why.find("allocator"), std::string::npos) << s.longest[2].why;
  // Device idle: span [7200,10402) less 1392 busy = 1810; cudaMalloc fills [7300,8800) of it.
  EXPECT_EQ(r.devices.at(0).idle(), 1'810'000);
  EXPECT_EQ(s.idle_covered.at(0), 1'500'000);
  // k_warm (10 us) is short against its 2 ms launch, k_tail (2 us) against its 5 us one.
  EXPECT_EQ(r.launch.short_kernels, 2u);
  EXPECT_EQ(r.launch.short_kernels_slow_launch, 1u);
  EXPECT_EQ(r.launch.short_slow_launch_cpu, 2'000'000);
  EXPECT_EQ(r.launch.short_slow_launch_gpu, 10'000);
  ASSERT_GE(r.findings.size(), 3u);
  EXPECT_EQ(r.findings[0].kind, "slow_api_calls");
  EXPECT_EQ(r.findings[0].impact, 8'500'000);
  int checked = 0;
  for (const Finding& f : r.findings) {
    checked += f.kind == "idle" || f.kind == "short_kernels";
    if (f.kind == "idle") {
      EXPECT_NE(f.text.find("83% of it inside CUDA API calls over 1 ms"), std::string::npos) << f.text;
      EXPECT_EQ(f.text.find("CUDA Graphs"), std::string::npos) << f.text;
    }
    if (f.kind == "short_kernels") {
      EXPECT_EQ(f.text.find("1 of 3 kernels (33%) run shorter on the GPU than their launch call on the CPU (2 us of GPU time "
                            "against 5 us of launch calls"),
                0u)
          << f.text;
      EXPECT_NE(f.text.find("1 more whose launch took over 1 ms (2 ms in all) left out"), std::string::npos) << f.text;
      // k_tail's launch (9100) came while k_main ran: queued, not waited for.
      EXPECT_NE(f.text.find("the GPU waited for none of them"), std::string::npos) << f.text;
      EXPECT_EQ(f.impact, 0);
    }
  }
  EXPECT_EQ(checked, 2);
  // A window of the measured phase keeps neither the start-up calls nor k_warm.
  TraceData measured = load_trace_file(data("slow_calls.json"));
  const StepSelection sel = select_window(measured, "measure");
  EXPECT_TRUE(sel.filtered);
  EXPECT_NE(sel.what.find("the 1 user annotation whose name contains it"), std::string::npos) << sel.what;
  const Report m = analyze(measured);
  EXPECT_EQ(m.kernel_count(), 2u);
  EXPECT_EQ(m.slow_calls.calls, 0u);
  for (const Finding& f : m.findings) EXPECT_NE(f.kind, "slow_api_calls");
  // The warm-up window: its first call is not the trace's first, so no context is claimed.
  TraceData warm = load_trace_file(data("slow_calls.json"));
  select_window(warm, "warmup");
  const Report w = analyze(warm);
  EXPECT_EQ(w.kernel_count(), 1u);
  ASSERT_EQ(w.slow_calls.calls, 2u);
  EXPECT_EQ(w.slow_calls.longest[0].name, "cudaLaunchKernel");
  TraceData none = load_trace_file(data("slow_calls.json"));
  EXPECT_THROW(select_window(none, "backward"), kl::BadInput);
}

// untraced_gap.json, in us: k_a [10,15) and k_b [16,20) on stream 7, k_c [1020,1030) on stream 8,
// k_d [2530,2540) on stream 9; ProfilerStep#1 [0,1100) holds "## data_load ##" [100,800) and
// aten::copy_ [150,160); aten::item [1200,1250); launches at 1, 2, 1005 and 2520.
TEST(TraceAnalyze, GapsNameTheInnermostCpuEventAndSayWhenTheCpuWasUntraced) {
  const Report r = analyze(load_trace_file(data("untraced_gap.json")));
  ASSERT_EQ(r.gaps.size(), 2u);
  // [1030,2530): ProfilerStep#1 70 us, aten::item 50, the launch 5: 125 of 1500 traced.
  EXPECT_EQ(r.gaps[0].dur, 1'500'000);
  EXPECT_EQ(r.gaps[0].cpu_busy, 125'000);
  EXPECT_EQ(r.gaps[0].cpu[0].name, "ProfilerStep#1");
  // [20,1020): the step and data_load both lie under half of it or more; data_load is the innermost.
  ASSERT_EQ(r.gaps[1].cpu.size(), 3u);
  EXPECT_EQ(r.gaps[1].cpu[0].name, "## data_load ##");
  EXPECT_EQ(r.gaps[1].cpu[1].name, "ProfilerStep#1");
  EXPECT_EQ(r.gaps[1].cpu[2].name, "aten::copy_");
  int checked = 0;
  for (const Finding& f : r.findings) {
    if (f.kind == "gaps") {
      ++checked;
      EXPECT_NE(f.text.find("the longest, 1.5 ms at +1.02 ms, with traced CPU events under only 8% of it (the rest untraced host "
                            "work: data loading, Python, sleeps); the most, ProfilerStep#1 (user_annotation, 70 us)"),
                std::string::npos)
          << f.text;
    }
    if (f.kind == "idle") {
      ++checked;
      // Idle 2530 - 29 us; the only gap between ops on one stream is k_a to k_b, 1 us of kernel wait.
      EXPECT_NE(f.text.find("the gaps between ops on one stream hold only 1 us of it (host wait 0 ns, kernel wait 1 us, other 0 ns)"),
                std::string::npos)
          << f.text;
      EXPECT_EQ(f.text.find("CUDA Graphs"), std::string::npos) << f.text;
    }
  }
  EXPECT_EQ(checked, 2);
}

// PyTorch 1.8-1.9 spelled Kineto's categories "Kernel", "Memcpy", "Memset", "Runtime", "Operator":
// the same events under those names give the same analysis (the published ResNet-50 samples use them).
TEST(TraceAnalyze, PyTorch19CategorySpellingsGiveTheSameReport) {
  nlohmann::json now = report_json(two_streams(), 0), old = report_json(two_streams("two_streams_pytorch19.json"), 0);
  for (nlohmann::json* j : {&now, &old}) j->erase("source"), j->erase("categories"), j->erase("json_bytes");
  EXPECT_EQ(old, now);
  EXPECT_EQ(old.at("devices").size(), 1u);
}

// The PyTorch profiler's own ResNet-50 sample (1.9, tests/data/pytorch_traces): read, not "no GPU activity".
TEST(TraceAnalyze, PublishedPyTorch19SampleHasItsKernels) {
  const Report r = analyze(load_trace_file(std::string(KERNELAB_SOURCE_DIR) + "/tests/data/pytorch_traces/resnet50_pytorch19_workers0.json.gz"));
  ASSERT_TRUE(r.gpu_activity());
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_EQ(r.devices.at(0).kernels, 8772u);
  EXPECT_EQ(r.devices.at(0).memcpys, 12u);
  EXPECT_EQ(r.devices.at(0).memsets, 312u);
  EXPECT_EQ(r.device_names.at(0), "Tesla V100-DGXS-32GB");
  EXPECT_EQ(r.events, 75718u);
}

// two_steps.json, in us: ProfilerStep#1 [0,100) launches kernel_a [20,30); ProfilerStep#2 [100,300)
// launches kernel_b [120,150) and, by a call at 250, kernel_c [260,265).
TEST(TraceSteps, TableCompleteAndRangeByHand) {
  const TraceData t = load_trace_file(data("two_steps.json"));
  const StepTable table = step_table(t, {});
  ASSERT_EQ(table.rows.size(), 2u);
  EXPECT_EQ(table.rows[0].step, 1);
  EXPECT_EQ(table.rows[0].kernels, 1u);
  EXPECT_EQ(table.rows[0].kernel_time, 10'000);
  EXPECT_EQ(table.rows[0].gpu_span, 10'000);
  EXPECT_EQ(table.rows[1].cpu_dur, 200'000);
  EXPECT_EQ(table.rows[1].kernels, 2u);
  EXPECT_EQ(table.rows[1].kernel_time, 35'000);
  EXPECT_EQ(table.rows[1].gpu_span, 145'000);  // 120 to 265
  EXPECT_EQ(table.rows[1].gpu_busy, 35'000);
  EXPECT_EQ(table.rows[1].host_wait, 110'000);  // kernel_c's call (250) started after kernel_b ended (150)
  EXPECT_EQ(table.slowest, "step 2 took 200 us, 100 us more than the median step 1 (100 us); most of it 110 us more host wait "
                           "(the GPU waited for the CPU to launch)");
  TraceData complete = t;
  const StepSelection sel = select_steps(complete, parse_steps("complete"));
  EXPECT_TRUE(sel.filtered);
  EXPECT_EQ(complete.gpu.size(), 1u) << "HTA's window: launched before the last step starts";
  EXPECT_EQ(complete.host.size(), 2u);
  TraceData second = t;
  select_steps(second, parse_steps("2-2"));
  EXPECT_EQ(second.gpu.size(), 2u);
  TraceData all = t;
  EXPECT_FALSE(select_steps(all, parse_steps("all")).filtered);
  EXPECT_EQ(all.gpu.size(), 3u);
  EXPECT_THROW(parse_steps("2-1"), kl::BadInput);
  EXPECT_THROW(select_steps(second, parse_steps("3")), kl::BadInput);
}

// gpu_metrics.json, in us: steps [0,100) and [100,200); k1 [20,60) 0.5 blocks/SM 40%, k2 [40,80) 0.75
// 20%, k3 [120,150) 2.0 60%, k4 [170,180) without either field. Range [0,200) (each step already
// holds its kernels); busy 60 + 30 + 10 = 100; blocks per SM summed and capped at 1:
// [20,40) 0.5, [40,60) 1, [60,80) 0.75, [120,150) 1 -> 75 / 200; occupancy by duration over the
// three kernels that have it: (40*40 + 40*20 + 30*60) / 110. The same in PyTorch 1.9's spellings.
TEST(TraceGpuMetrics, TensorBoardPluginDefinitionsByHand) {
  for (const char* file : {"gpu_metrics.json", "gpu_metrics_pytorch19.json"}) {
    SCOPED_TRACE(file);
    const GpuMetrics m = gpu_metrics(load_trace_file(data(file)));
    EXPECT_EQ(m.range_start, 0);
    EXPECT_EQ(m.range_end, 200'000);
    ASSERT_EQ(m.devices.size(), 1u);
    const DeviceGpuMetrics& d = m.devices.at(0);
    EXPECT_DOUBLE_EQ(d.utilization, 0.5);
    ASSERT_TRUE(d.sm_efficiency);
    EXPECT_DOUBLE_EQ(*d.sm_efficiency, 0.375);
    ASSERT_TRUE(d.achieved_occupancy_pct);
    EXPECT_DOUBLE_EQ(*d.achieved_occupancy_pct, 4200.0 / 110);
    EXPECT_EQ(d.with_occupancy, 3u);
    EXPECT_EQ(m.bucket, 10'000);  // 200 us in buckets of a power of 10 us, at most 100
    ASSERT_EQ(d.timeline.size(), 20u);
    EXPECT_DOUBLE_EQ(d.timeline[2].second, 1.0);   // [20,30)
    EXPECT_DOUBLE_EQ(d.timeline[8].second, 0.0);   // [80,90)
    EXPECT_DOUBLE_EQ(d.timeline[17].second, 1.0);  // [170,180)
  }
  // Without the per-kernel fields there is no figure, not a zero.
  const GpuMetrics none = gpu_metrics(load_trace_file(data("two_streams.json")));
  ASSERT_FALSE(none.devices.empty());
  EXPECT_FALSE(none.devices.begin()->second.sm_efficiency);
  EXPECT_FALSE(none.devices.begin()->second.achieved_occupancy_pct);
}

// The plugin's own tests (tb_plugin/test/test_profiler.py, test_gpu_utilization and
// test_gpu_utilization_kernel_out_of_step): their events, their expected figures.
TEST(TraceGpuMetrics, TheTensorBoardPluginsOwnTestExpectations) {
  const std::string dir = std::string(KERNELAB_SOURCE_DIR) + "/tests/data/pytorch_traces/";
  const GpuMetrics m = gpu_metrics(load_trace_file(dir + "tb_plugin_gpu_utilization.json"));
  ASSERT_EQ(m.devices.size(), 1u);
  const DeviceGpuMetrics& d = m.devices.at(1);
  EXPECT_NEAR(d.utilization, (40.0 + 20) / 120, 1e-12);
  ASSERT_TRUE(d.sm_efficiency);
  EXPECT_NEAR(*d.sm_efficiency, (0.5 * 5 + 1.0 * 5 + 0.6 * 5 + 0.9 * 5 + 0.3 * 20 + 1.0 * 20) / 120, 1e-6);
  ASSERT_TRUE(d.achieved_occupancy_pct);
  EXPECT_NEAR(*d.achieved_occupancy_pct, (0.6 * 10 + 0.1 * 15 + 1.0 * 25 + 0.3 * 20) / (10 + 15 + 25 + 20), 1e-6);
  const std::vector<std::pair<int, double>> util = {{100, 0}, {110, 0}, {120, 0}, {130, 1}, {140, 1}, {150, 1},
                                                    {160, 1}, {170, 0}, {180, 0}, {190, 0}, {200, 1}, {210, 1}};
  ASSERT_EQ(d.timeline.size(), util.size());
  for (size_t i = 0; i < util.size(); ++i) {
    EXPECT_EQ(d.timeline[i].first, util[i].first * 1000) << i;
    EXPECT_DOUBLE_EQ(d.timeline[i].second, util[i].second) << i;
  }
  const GpuMetrics out = gpu_metrics(load_trace_file(dir + "tb_plugin_kernel_out_of_step.json"));
  const DeviceGpuMetrics& o = out.devices.at(1);
  EXPECT_DOUBLE_EQ(o.utilization, 0.0);
  EXPECT_FALSE(o.sm_efficiency) << "no kernel inside the step";
  EXPECT_FALSE(o.achieved_occupancy_pct);
  EXPECT_GT(o.with_blocks_per_sm, 0u);
}

// memory.json (PyTorch 1.10's layout, with Addr and the allocator's totals), in us: conv2d [0,100)
// holds two aten::empty, at 10 and 50; 1000 B allocated at 11, 3000 at 51 (Total Allocated 4000: the
// peak), the first freed at 60, 500 at 70. The 1.9 sample has neither Addr nor totals: a running sum.
TEST(TraceMemory, PeakWhenUnderWhichOperatorAndWhatWasLive) {
  const std::vector<DeviceMemory> m = memory_peaks(load_trace_file(data("memory.json")));
  ASSERT_EQ(m.size(), 1u);
  const DeviceMemory& d = m[0];
  EXPECT_EQ(d.device, "cuda:0");
  EXPECT_TRUE(d.from_totals);
  EXPECT_EQ(d.peak_allocated, 4000);
  EXPECT_EQ(d.peak_at, 51'000);
  EXPECT_EQ(d.peak_op, "aten::empty < aten::conv2d < ProfilerStep#1");
  EXPECT_EQ(d.peak_reserved, 4096);
  EXPECT_EQ(d.allocations, 3u);
  EXPECT_EQ(d.frees, 1u);
  ASSERT_TRUE(d.live_at_peak);
  ASSERT_EQ(d.live_at_peak->size(), 2u);
  EXPECT_EQ((*d.live_at_peak)[0].bytes, 3000);
  EXPECT_EQ((*d.live_at_peak)[1].bytes, 1000);
  EXPECT_EQ((*d.live_at_peak)[1].ts, 11'000);
  EXPECT_EQ(d.live_at_peak_bytes, 4000);
  const std::vector<DeviceMemory> old =
      memory_peaks(load_trace_file(std::string(KERNELAB_SOURCE_DIR) + "/tests/data/pytorch_traces/resnet50_pytorch19_workers0.json.gz"));
  ASSERT_EQ(old.size(), 2u);
  EXPECT_EQ(old[1].device, "cuda:0");
  EXPECT_FALSE(old[1].from_totals);
  EXPECT_FALSE(old[1].live_at_peak) << "no Addr: the live set is unknown, not empty";
  EXPECT_EQ(old[1].allocations, old[1].frees);
}

// two_steps_flows.json: two_steps.json with the kernels' args.correlation removed and Kineto's
// "ac2g" launch flows added (start on the runtime call, end on the kernel): the same analysis.
TEST(TraceAnalyze, LaunchFlowsStandInForAMissingCorrelation) {
  const TraceData t = load_trace_file(data("two_steps_flows.json"));
  EXPECT_EQ(t.flow_correlated, 3u);
  nlohmann::json flows = report_json(analyze(t), 0), plain = report_json(analyze(load_trace_file(data("two_steps.json"))), 0);
  for (nlohmann::json* j : {&flows, &plain}) j->erase("source"), j->erase("json_bytes"), j->erase("events");
  EXPECT_EQ(flows, plain);
  EXPECT_EQ(step_table(t, {}).rows[1].kernels, 2u);
}

// driver_launch.json: a Triton kernel launched through the driver (cuda_driver cuLaunchKernel, delay
// 30 - 16 = 14 us), a HIP launch (delay 60 - 55 = 5 us) and hipDeviceSynchronize (20 us); a
// python_function event, which no analysis reads.
TEST(TraceAnalyze, DriverAndHipLaunchesAndSyncsCount) {
  const Report r = analyze(load_trace_file(data("driver_launch.json")));
  EXPECT_EQ(r.launch.pairs, 2u);
  EXPECT_EQ(r.launch.max_delay, 14'000);
  ASSERT_EQ(r.sync.count("hipDeviceSynchronize"), 1u);
  EXPECT_EQ(r.sync.at("hipDeviceSynchronize").blocked, 20'000);
  EXPECT_EQ(r.kernel_count(), 2u);
}

TEST(TraceAnalyze, GzipGivesTheSameReport) {
  EXPECT_EQ(report_json(two_streams(), 0).dump(), [] {
    auto j = report_json(two_streams("two_streams.json.gz"), 0);
    j["source"] = data("two_streams.json");
    return j.dump();
  }());
}

TEST(TraceAnalyze, JsonKeysOthersRelyOn) {
  const auto j = report_json(two_streams(), 10);
  for (const char* k : {"kernel_count", "kernel_time_us", "devices", "top_kernels", "median_launch_delay_us", "idle_breakdown",
                        "temporal_breakdown", "overlap", "findings"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["kernel_count"], 4);
  EXPECT_DOUBLE_EQ(j["kernel_time_us"].get<double>(), 75.0);
  EXPECT_DOUBLE_EQ(j["devices"]["0"]["busy_us"].get<double>(), 57.0);
  EXPECT_DOUBLE_EQ(j["devices"]["0"]["span_us"].get<double>(), 142.0);
  EXPECT_DOUBLE_EQ(j["devices"]["0"]["idle_us"].get<double>(), 85.0);
  EXPECT_EQ(j["top_kernels"][0]["name"], "gemm_kernel");
  EXPECT_EQ(j["top_kernels"][0]["count"], 2);
  EXPECT_DOUBLE_EQ(j["top_kernels"][0]["total_us"].get<double>(), 40.0);
  EXPECT_DOUBLE_EQ(j["median_launch_delay_us"].get<double>(), 16.0);
  EXPECT_DOUBLE_EQ(j["idle_breakdown"]["kernel_wait_threshold_us"].get<double>(), 30.0);
}

TEST(TraceAnalyze, ArrayFormExactNanosecondsAndDevicesFromPid) {
  const Report r = analyze(load_trace_file(data("two_devices_array.json")));
  ASSERT_EQ(r.devices.size(), 2u);
  // Device 0: kernel [1000.5, 1010.75), memcpy from 1010.75 lasting 1.0005 us -> 1001 ns.
  EXPECT_EQ(r.devices.at(0).first, 1'000'500);
  EXPECT_EQ(r.devices.at(0).span(), 11'251);
  EXPECT_EQ(r.devices.at(0).busy, 11'251);
  EXPECT_EQ(r.devices.at(1).span(), 15'000);
  EXPECT_TRUE(r.idle.empty());  // no op names a stream
  EXPECT_TRUE(r.temporal.empty());
  EXPECT_FALSE(r.launch.median_delay.has_value());
}

TEST(TraceAnalyze, ExactMicrosecondParsing) {
  EXPECT_EQ(parse_us_as_ns("12"), 12'000);
  EXPECT_EQ(parse_us_as_ns("1694039994071305"), 1'694'039'994'071'305'000);  // epoch us: no double rounding
  EXPECT_EQ(parse_us_as_ns("4458676983543.183"), 4'458'676'983'543'183);
  EXPECT_EQ(parse_us_as_ns("0.0005"), 1);
  EXPECT_EQ(parse_us_as_ns("0.00049"), 0);
  EXPECT_EQ(parse_us_as_ns("-1.5"), -1'500);
  EXPECT_EQ(parse_us_as_ns("1.5e3"), 1'500'000);
  EXPECT_THROW(parse_us_as_ns("1e30"), kl::BadInput);
  EXPECT_THROW(parse_us_as_ns("99999999999999999999"), kl::BadInput);
}

TEST(TraceAnalyze, HtaKernelTypes) {
  EXPECT_EQ(hta_kernel_type("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)"), KernelType::communication);
  EXPECT_EQ(hta_kernel_type("ncclDevKernel_AllGather_RING_LL"), KernelType::communication);
  EXPECT_EQ(hta_kernel_type("nccl\nKernel"), KernelType::computation);  // '.' stops at a newline
  EXPECT_EQ(hta_kernel_type("Memcpy DtoD (Device -> Device)"), KernelType::memory);
  EXPECT_EQ(hta_kernel_type("Memset (Device)"), KernelType::memory);
  EXPECT_EQ(hta_kernel_type("dma_copy"), KernelType::memory);
  EXPECT_EQ(hta_kernel_type("Stream Sync"), KernelType::other);
  EXPECT_EQ(hta_kernel_type("fooMemcpyKernel"), KernelType::other);
  EXPECT_EQ(hta_kernel_type("Stream Wait Event"), KernelType::computation);  // HTA: no pattern matches
  EXPECT_EQ(hta_kernel_type("void gemm<float>()"), KernelType::computation);
}

TEST(TraceDiff, PerKernelDeltas) {
  const Report a = two_streams();
  const Report b = analyze(load_trace_file(data("two_devices_array.json")));
  const TraceDiff d = diff_reports(a, b);
  ASSERT_EQ(d.kernels.size(), 5u);
  EXPECT_EQ(d.kernels[0].name, "gemm_kernel");  // -40 us, the largest change
  EXPECT_EQ(d.kernels[0].delta(), -40'000);
  EXPECT_EQ(d.kernels[0].count_b, 0u);
  const auto j = diff_json(d, 0);
  EXPECT_EQ(j["kernel_count_delta"], -2);
  EXPECT_EQ(j["kernels"][0]["in"], "a");
}

}  // namespace
