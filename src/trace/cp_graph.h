// Internals of the critical path (critical_path.h): the events as HTA's rows, and the graph.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "trace/critical_path.h"
#include "trace/trace_data.h"

namespace kl::trace::cp {

// One row of HTA's trace table: an event with a cat and a dur, cat not "Trace".
struct Event {
  int64_t index = 0;          // position in traceEvents
  int64_t ts = 0, dur = 0;    // whole us: ceil(ts), floor(ts + dur) - ceil(ts)
  int64_t stream = -1, corr = -1, wait_stream = -1, wait_corr = -1;
  int64_t ic = -1;            // index of the correlated event on the other side; -1 none, 0 unmatched
  uint32_t name = 0, cat = 0, pid = 0, tid = 0;  // ids in Rows::names (pid, tid: their JSON text)
  int64_t end() const { return ts + dur; }
};

struct Rows {
  NameTable names;
  std::vector<Event> events;                     // in HTA's row order
  std::unordered_map<int64_t, uint32_t> at;      // index -> position in events
  const Event* find(int64_t index) const {
    auto it = at.find(index);
    return it == at.end() ? nullptr : &events[it->second];
  }
  const std::string& name(const Event& e) const { return names[e.name]; }
};

Rows load_rows(const std::string& file);       // every row, correlations linked
void keep_hta_default(Rows& r);                // HTA's Trace._filter_irrelevant_gpu_kernels
bool on_gpu(const Rows& r, const Event& e);    // a GPU op or a device-side sync ("Event/Context Sync")
// [start, end] of the annotation's instances; BadInput naming the spec when none matches.
std::pair<int64_t, int64_t> iteration_window(const Rows& r, const CriticalPathSpec& s);
// Positions (in r.events) of the iteration's rows: CPU events starting in the window (dur > 0) and
// GPU events whose launch call does, plus every "Stream Wait Event".
std::vector<uint32_t> clip(const Rows& r, int64_t start, int64_t end);

struct Edge {
  uint32_t u = 0, v = 0;
  CpEdge type = CpEdge::operator_;
  int64_t weight = 0;
  int64_t attributed = -1;  // event index the time belongs to (operator and kernel-kernel edges)
};

class Graph {
 public:
  Graph(const Rows& rows, const std::vector<uint32_t>& kept, bool launch_edges);
  // The nodes: two per event, by (time, event index, start before end).
  std::vector<int64_t> node_ts, node_event;
  std::vector<bool> node_start;
  std::vector<Edge> edges;
  std::vector<uint32_t> appearance;              // nodes in the order an edge first touched them
  std::vector<std::vector<uint32_t>> pred;       // per node: edge ids, first insertion order
  std::vector<std::vector<uint32_t>> succ;

 private:
  void add(uint32_t u, uint32_t v, CpEdge type, bool zero = false, int64_t attributed = -2);
  void lock_edges();
  void stack_edges(const std::vector<uint32_t>& kept);
  void walk_thread(std::vector<const Event*>& evs);
  void gpu_edges(const std::vector<uint32_t>& kept);
  bool is_lock(uint32_t n) const;
  bool shares_lock(uint32_t a, uint32_t b) const;
  int64_t start_of(int64_t ev) const;  // -1 when the event has no nodes
  int64_t end_of(int64_t ev) const;

  const Rows& rows_;
  bool launch_edges_;
  std::unordered_map<int64_t, uint32_t> start_, end_;
  std::unordered_map<uint64_t, uint32_t> edge_at_;  // (u << 32 | v) -> edge id
  std::vector<bool> seen_;
};

}  // namespace kl::trace::cp
