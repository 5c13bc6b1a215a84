// `trace analyze --critical-path`: the graph and the longest path against HTA's own expectations
// (tests/test_critical_path_analysis.py and its committed end-to-end output, holistictraceanalysis
// f4d0062), against HTA run on its test traces, and on a trace small enough to solve by hand.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "cli_util.h"
#include "kernelab/error.h"
#include "trace/cp_graph.h"

namespace {

using namespace kl::trace;
const std::string kHta = std::string(KERNELAB_SOURCE_DIR) + "/tests/data/hta_traces/";
const std::string kAlexNetForward = "[param|pytorch.model.alex_net|0|0|0|measure|forward]";

nlohmann::json run_cp(const std::string& file, const std::string& spec, const std::string& flags = "") {
  const auto r = kl::test::run_kernelab("trace analyze --json --top 0 " + flags + " --critical-path '" + spec + "' " + file);
  EXPECT_EQ(r.code, 0) << r.err;
  return r.code == 0 ? nlohmann::json::parse(r.out)["critical_path"] : nlohmann::json();
}

const cp::Edge* find_edge(const cp::Graph& g, int64_t u, int64_t v) {
  for (const cp::Edge& e : g.edges)
    if (e.u == u && e.v == v) return &e;
  return nullptr;
}

// HTA's test_critical_path_basic_add: node ids, weights and attribution of nested ops, a launch
// delay, a kernel-kernel delay, a zero-weight launch edge and a device sync edge, by event index.
TEST(TraceCriticalPath, HtaBasicAddGraph) {
  cp::Rows rows = cp::load_rows(kHta + "cp_simple_add.json.gz");
  const auto [start, end] = cp::iteration_window(rows, parse_critical_path(kAlexNetForward + "@1"));
  const cp::Graph g(rows, cp::clip(rows, start, end), /*launch_edges=*/true);
  auto nodes = [&](int64_t ev) {
    std::pair<int64_t, int64_t> n{-1, -1};
    for (size_t i = 0; i < g.node_event.size(); ++i)
      if (g.node_event[i] == ev) (g.node_start[i] ? n.first : n.second) = static_cast<int64_t>(i);
    return n;
  };
  const int64_t relu = 286, clamp_min = 287, launch = 1005;
  EXPECT_EQ(rows.name(*rows.find(relu)), "aten::relu_");
  EXPECT_EQ(rows.name(*rows.find(launch)), "cudaLaunchKernel");
  EXPECT_EQ(nodes(relu), std::make_pair(int64_t{57}, int64_t{62}));
  EXPECT_EQ(nodes(clamp_min), std::make_pair(int64_t{58}, int64_t{61}));
  EXPECT_EQ(nodes(launch), std::make_pair(int64_t{59}, int64_t{60}));
  struct Want {
    int64_t u, v, weight, attributed;
  };
  for (const Want& w : {Want{57, 58, 15, relu}, Want{58, 59, 14, clamp_min}, Want{59, 60, 17, launch}, Want{60, 61, 15, clamp_min},
                        Want{61, 62, 32, relu}}) {
    const cp::Edge* e = find_edge(g, w.u, w.v);
    ASSERT_NE(e, nullptr) << w.u << "->" << w.v;
    EXPECT_EQ(e->weight, w.weight) << w.u << "->" << w.v;
    EXPECT_EQ(e->attributed, w.attributed) << w.u << "->" << w.v;
  }
  const int64_t fft = 1051, ampere = 1067;
  const cp::Edge* delay = find_edge(g, nodes(rows.find(fft)->ic).first, nodes(fft).first);
  ASSERT_NE(delay, nullptr);
  EXPECT_EQ(delay->type, CpEdge::kernel_launch_delay);
  EXPECT_EQ(delay->weight, 27);
  const cp::Edge* gap = find_edge(g, nodes(fft).second, nodes(ampere).first);
  ASSERT_NE(gap, nullptr);
  EXPECT_EQ(gap->type, CpEdge::kernel_kernel_delay);
  EXPECT_EQ(gap->weight, 7);
  const cp::Edge* zero = find_edge(g, nodes(rows.find(ampere)->ic).first, nodes(ampere).first);
  ASSERT_NE(zero, nullptr);
  EXPECT_EQ(zero->type, CpEdge::kernel_launch_delay);
  EXPECT_EQ(zero->weight, 0);
  const cp::Edge* sync = find_edge(g, nodes(1275).second, nodes(1281).second);
  ASSERT_NE(sync, nullptr);
  EXPECT_EQ(sync->type, CpEdge::sync_dependency);
  EXPECT_EQ(sync->weight, 0);
}

// HTA's test_critical_path_basic_add and _overlaid_trace: 315 nodes on the path, 159 events, 314
// edges of which 21 are dependency, launch or sync edges.
TEST(TraceCriticalPath, HtaBasicAddPath) {
  const auto j = run_cp(kHta + "cp_simple_add.json.gz", kAlexNetForward + "@1", "--cp-launch-edges");
  EXPECT_EQ(j["path_nodes"], 315);
  EXPECT_EQ(j["path_events"], 159);
  const auto& on = j["path_edge_counts"];
  EXPECT_EQ(on["operator"].get<int>() + on["dependency"].get<int>() + on["kernel_launch_delay"].get<int>() +
                on["kernel_kernel_delay"].get<int>() + on["sync_dependency"].get<int>(),
            314);
  EXPECT_EQ(on["dependency"].get<int>() + on["kernel_launch_delay"].get<int>() + on["sync_dependency"].get<int>(), 21);
}

// HTA's committed end-to-end output (critical_path/end_to_end/simple_add/output, whole trace, its
// default edges): 624 events marked critical, and 158 dependency, 17 launch (1572 us) and 17 sync
// edges on the path.
TEST(TraceCriticalPath, HtaEndToEndOutput) {
  const auto j = run_cp(kHta + "cp_simple_add.json.gz", "all");
  EXPECT_EQ(j["path_events"], 624);
  EXPECT_EQ(j["path_edge_counts"]["dependency"], 158);
  EXPECT_EQ(j["path_edge_counts"]["kernel_launch_delay"], 17);
  EXPECT_EQ(j["path_edge_counts"]["sync_dependency"], 17);
  EXPECT_EQ(j["by_edge_type_us"]["kernel_launch_delay"], 1572);
}

// HTA (f4d0062, run here with pandas 2.3 and networkx 3.6: TraceAnalysis(...).critical_path_analysis
// and the graph's summary) on its critical-path test traces: graph size, path and bound_by sums (us).
TEST(TraceCriticalPath, AgreesWithHtaOnItsTestTraces) {
  struct Case {
    std::string file, spec, flags;
    int nodes, edges, path_nodes;
    int64_t length, cpu, compute, launch, kernel_kernel;
  };
  const Case cases[] = {
      {"cp_simple_add.json.gz", kAlexNetForward + "@1", "", 458, 415, 315, 241724, 241190, 508, 17, 9},
      {"cp_alexnet.json.gz", kAlexNetForward + "@1", "", 462, 421, 149, 35834, 32042, 3712, 30, 50},
      {"cp_alexnet.json.gz", kAlexNetForward + "@1", "--cp-launch-edges", 462, 456, 149, 35834, 32042, 3712, 30, 50},
      {"event_sync.json.gz", "ProfilerStep", "--steps complete", 56, 57, 40, 2411, 2365, 36, 10, 0},
      {"event_sync_multi_stream.json.gz", "all", "", 80, 82, 59, 1178, 1025, 124, 14, 15},
      {"event_sync_multi_stream.json.gz", "all", "--cp-launch-edges", 80, 85, 59, 1178, 1025, 124, 14, 15},
      {"cp_simple_add.json.gz", "all", "--cp-launch-edges", 1510, 1493, 1210, 41435045, 41393773, 39689, 1572, 11},
      {"amd_mi250_rocm6.json.gz", "ProfilerStep@1", "--steps complete", 80, 79, 66, 741, 741, 0, 0, 0},
      {"ns_resolution_rank0.json.gz", "ProfilerStep@1", "--steps complete", 11228, 11225, 2438, 95735, 0, 93692, 0, 2043},
      {"ns_resolution_rank0.json.gz", "ProfilerStep@1", "--steps complete --cp-launch-edges", 11228, 12444, 2983, 97176, 1773, 93597, 0, 1806},
      {"trace_diff_test.json.gz", "ProfilerStep@1", "--steps complete", 17712, 17700, 6346, 77056, 77056, 0, 0, 0},
      {"trace_diff_test.json.gz", "ProfilerStep@1", "--steps complete --cp-launch-edges", 17712, 19353, 5803, 81967, 75187, 5832, 0, 948},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file + " " + c.spec + " " + c.flags);
    const auto j = run_cp(kHta + c.file, c.spec, c.flags);
    ASSERT_FALSE(j.is_null());
    EXPECT_EQ(j["nodes"], c.nodes);
    EXPECT_EQ(j["edges"], c.edges);
    EXPECT_EQ(j["path_nodes"], c.path_nodes);
    EXPECT_EQ(j["length_us"], c.length);
    auto bound = [&](const char* k) { return j["by_bound_us"].value(k, int64_t{0}); };
    EXPECT_EQ(bound("cpu_bound"), c.cpu);
    EXPECT_EQ(bound("gpu_compute_bound"), c.compute);
    EXPECT_EQ(bound("gpu_kernel_launch_overhead"), c.launch);
    EXPECT_EQ(bound("gpu_kernel_kernel_overhead"), c.kernel_kernel);
  }
}

// One step solved by hand (tests/data/traces/critical_path.json): train_step [0, 300] launches a
// 200 us kernel at 10 (it starts at 30) and waits for it in cudaStreamSynchronize [50, 240].
// Path: 10 us of train_step, 20 us launch delay, the kernel's 200 us, the sync edge, and train_step's
// last 60 us: 290 us, 70 of them CPU. The CPU-only chain is 110 us (the blocking call weighs 0).
TEST(TraceCriticalPath, HandSolvedStep) {
  const auto j = run_cp(std::string(KERNELAB_SOURCE_DIR) + "/tests/data/traces/critical_path.json", "3");
  EXPECT_EQ(j["length_us"], 290);
  EXPECT_EQ(j["by_bound_us"]["cpu_bound"], 70);
  EXPECT_EQ(j["by_bound_us"]["gpu_kernel_launch_overhead"], 20);
  EXPECT_EQ(j["by_bound_us"]["gpu_compute_bound"], 200);
  EXPECT_EQ(j["sync_edges_on_path"], 1);
  EXPECT_EQ(j["sync_wait_us"], 190);
  EXPECT_EQ(j["top"][0]["name"], "gemm_kernel");
  EXPECT_EQ(j["path_events"], 4);
}

TEST(TraceCriticalPath, BadSpecsExitTwoNamingTheValue) {
  const std::string f = std::string(KERNELAB_SOURCE_DIR) + "/tests/data/traces/critical_path.json";
  for (const std::string spec : {"@1", "ProfilerStep@x", "ProfilerStep@3-1"}) {
    const auto r = kl::test::run_kernelab("trace analyze --critical-path '" + spec + "' " + f);
    EXPECT_EQ(r.code, 2) << spec;
    EXPECT_NE(r.err.find(spec), std::string::npos) << r.err;
  }
  const auto missing = kl::test::run_kernelab("trace analyze --critical-path 4 " + f);
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("no such event"), std::string::npos) << missing.err;
  EXPECT_THROW(parse_critical_path(""), kl::BadInput);
}

}  // namespace
