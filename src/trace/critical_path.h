// `trace analyze --critical-path`: the longest chain of dependent work in one iteration, with HTA's
// definition (hta/analyzers/critical_path_analysis.py, CPGraph; holistictraceanalysis at f4d0062):
//   nodes  a start and an end per CPU operator, CUDA runtime/driver call and GPU op (kernel, memcpy,
//          memset) of the iteration: CPU events that start inside the annotation's span, GPU ops
//          whose launch call does
//   edges  operator       start -> end of an op or kernel, and between nested ops (weight: the time
//                         between the two nodes; zero into the end of a blocking sync call)
//          dependency     between consecutive top-level ops of a thread, and between calls that
//                         hold the CUDA runtime lock (weight 0)
//          kernel_launch_delay  launch call start -> kernel start, when the stream was empty at the
//                         launch (weight: the delay); weight 0 otherwise with launch_edges
//          kernel_kernel_delay  previous op on the stream -> next op, gap < 1.5 ms (weight: the gap)
//          sync_dependency  last op on a stream -> end of cudaStreamSynchronize ("Stream Sync"),
//                         every stream -> cudaDeviceSynchronize ("Context Sync"), the op before a
//                         cudaEventRecord -> cudaEventSynchronize ("Event Sync") or -> the next op
//                         launched after cudaStreamWaitEvent ("Stream Wait Event") (weight 0)
//   path   the longest path of that DAG (the order networkx.dag_longest_path walks, so equal paths
//          resolve as HTA's do), split by edge type and by HTA's bound_by: cpu_bound,
//          gpu_compute_bound, gpu_communication_bound, gpu_kernel_launch_overhead,
//          gpu_kernel_kernel_overhead.
// Times are HTA's: whole microseconds, a start rounded up and an end down, in float64.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace kl::trace {

// Which iteration: "N" (ProfilerStep#N, the CPU one), "NAME" or "NAME@K" or "NAME@A-B" (HTA's
// annotation and instance_id: the K-th event, in HTA's row order, whose name contains NAME), or
// "all" (the whole trace, HTA's annotation "").
struct CriticalPathSpec {
  std::string text, annotation;
  bool step = false, whole = false;
  int64_t first = 0, last = 0;
};
CriticalPathSpec parse_critical_path(std::string_view text);  // BadInput naming the text

struct CriticalPathOptions {
  CriticalPathSpec spec;
  bool hta_default_events = false;  // --steps complete: HTA's default event set (its Trace filter)
  bool launch_edges = false;        // HTA's CRITICAL_PATH_ADD_ZERO_WEIGHT_LAUNCH_EDGE=1 (its tests' setting)
  int top = 10;
};

enum class CpEdge : uint8_t { operator_, dependency, kernel_launch_delay, kernel_kernel_delay, sync_dependency };
inline constexpr int kCpEdgeTypes = 5;
const char* cp_edge_name(CpEdge e);

struct CriticalPathItem {
  std::string name, bound;
  int64_t us = 0;
  uint64_t edges = 0;
};

struct CriticalPath {
  std::string spec;
  int64_t window_start_us = 0, window_end_us = 0;
  uint64_t events = 0;                // events of the iteration
  uint64_t nodes = 0, graph_nodes = 0, edges = 0;  // nodes made, nodes with an edge, edges
  std::array<uint64_t, kCpEdgeTypes> edge_counts{};
  uint64_t path_nodes = 0, path_events = 0;
  int64_t length_us = 0;
  std::array<uint64_t, kCpEdgeTypes> path_edge_counts{};
  std::array<int64_t, kCpEdgeTypes> by_edge_type_us{};
  std::map<std::string, int64_t> by_bound_us;
  uint64_t sync_edges_on_path = 0;
  int64_t sync_wait_us = 0;           // the CPU blocked in the sync calls those edges end in
  uint64_t negative_edges = 0;        // edges whose end precedes their start (counted as 0)
  bool launch_edges = false;
  std::vector<CriticalPathItem> top;  // the events with the most time on the path
};

// Reads the trace file a second time (only the fields the graph needs). BadInput when the
// annotation is not in the trace or the graph has a cycle.
CriticalPath critical_path(const std::string& file, const CriticalPathOptions& opt);
std::string format_critical_path(const CriticalPath& cp);
nlohmann::json critical_path_json(const CriticalPath& cp);

}  // namespace kl::trace
