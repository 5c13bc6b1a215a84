// The critical path's graph, edge by edge as HTA's CPGraph builds it (critical_path_analysis.py:
// _construct_graph_from_cuda_runtime_events, _construct_graph_from_call_stacks,
// _construct_graph_from_kernels). An edge added twice keeps its first place and its last values,
// as in a networkx DiGraph.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "trace/cp_graph.h"

namespace kl::trace::cp {

namespace {
const std::set<std::string, std::less<>> kLockCalls = {"cudaHostAlloc", "cudaLaunchKernel", "cudaMemcpyAsync"};
const std::set<std::string, std::less<>> kBlockingCalls = {"cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventQuery",
                                                           "cudaEventSynchronize",  "cudaMemcpy",            "cudaMemcpyAsync"};
const std::set<std::string, std::less<>> kNodeCats = {"cpu_op", "cuda_runtime", "cuda_driver", "Operator", "Runtime", "Driver"};

// A JSON pid/tid text as HTA's groupby orders it: numbers before strings, numbers by value.
std::tuple<bool, double, std::string_view> id_order(std::string_view text) {
  if (!text.empty() && text.front() == '"') return {true, 0.0, text};
  return {false, std::strtod(std::string(text).c_str(), nullptr), text};
}
}  // namespace

Graph::Graph(const Rows& rows, const std::vector<uint32_t>& kept, bool launch_edges) : rows_(rows), launch_edges_(launch_edges) {
  struct Mark {
    int64_t ts, index;
    bool end;
  };
  std::vector<Mark> marks;
  for (uint32_t i : kept) {
    const Event& e = rows.events[i];
    if (kNodeCats.count(rows.names[e.cat]) || (e.stream != -1 && e.ic >= 0))
      marks.push_back({e.ts, e.index, false}), marks.push_back({e.end(), e.index, true});
  }
  std::sort(marks.begin(), marks.end(), [](const Mark& a, const Mark& b) {
    return std::tie(a.ts, a.index, a.end) < std::tie(b.ts, b.index, b.end);
  });
  for (const Mark& m : marks) {
    (m.end ? end_ : start_)[m.index] = static_cast<uint32_t>(node_ts.size());
    node_ts.push_back(m.ts), node_event.push_back(m.index), node_start.push_back(!m.end);
  }
  pred.resize(node_ts.size()), succ.resize(node_ts.size()), seen_.resize(node_ts.size());
  lock_edges();
  stack_edges(kept);
  gpu_edges(kept);
}

int64_t Graph::start_of(int64_t ev) const {
  auto it = start_.find(ev);
  return it == start_.end() ? int64_t{-1} : int64_t{it->second};
}
int64_t Graph::end_of(int64_t ev) const {
  auto it = end_.find(ev);
  return it == end_.end() ? int64_t{-1} : int64_t{it->second};
}

// attributed: the event an operator/kernel-kernel edge's time belongs to; -2 lets the nodes decide
// (HTA's _attribute_edge cases 1-3: the source if it is a start, else the destination if an end).
void Graph::add(uint32_t u, uint32_t v, CpEdge type, bool zero, int64_t attributed) {
  const bool weightless = type == CpEdge::dependency || type == CpEdge::sync_dependency || zero;
  Edge e{u, v, type, weightless ? 0 : node_ts[v] - node_ts[u]};
  if (type == CpEdge::operator_ || type == CpEdge::kernel_kernel_delay) {
    e.attributed = attributed != -2                                        ? attributed
                   : type == CpEdge::kernel_kernel_delay || node_start[u] ? node_event[u]
                   : !node_start[v]                                       ? node_event[v]
                                                                          : -1;
  }
  for (uint32_t n : {u, v})
    if (!seen_[n]) seen_[n] = true, appearance.push_back(n);
  const uint64_t key = uint64_t{u} << 32 | v;
  if (auto it = edge_at_.find(key); it != edge_at_.end()) {
    edges[it->second] = e;
    return;
  }
  const auto id = static_cast<uint32_t>(edges.size());
  edge_at_.emplace(key, id);
  edges.push_back(e);
  succ[u].push_back(id), pred[v].push_back(id);
}

bool Graph::is_lock(uint32_t n) const { return kLockCalls.count(rows_.name(*rows_.find(node_event[n]))) > 0; }

bool Graph::shares_lock(uint32_t a, uint32_t b) const { return is_lock(a) && is_lock(b) && (node_start[a] || !node_start[b]); }

// Calls that take the CUDA runtime lock run one at a time; who held it is read from the order of their ends.
void Graph::lock_edges() {
  std::vector<uint32_t> pending;
  std::optional<uint32_t> last;
  for (uint32_t n = 0; n < node_ts.size(); ++n) {
    if (!is_lock(n)) continue;
    if (node_start[n]) {
      pending.push_back(n);
    } else {
      while (!pending.empty()) {
        const uint32_t p = pending.back();
        pending.pop_back();
        add(p, n, node_event[p] == node_event[n] ? CpEdge::operator_ : CpEdge::dependency);
      }
      if (last && !node_start[*last]) add(*last, n, CpEdge::dependency);
    }
    last = n;
  }
}

void Graph::stack_edges(const std::vector<uint32_t>& kept) {
  // HTA merges the backward thread into the forward one: the single threads with "autograd" and
  // "forward" cpu_op/user_annotation events.
  auto thread_of = [&](std::string_view word) -> std::optional<uint32_t> {
    std::set<uint32_t> tids;
    for (uint32_t i : kept) {
      const Event& e = rows_.events[i];
      const std::string& cat = rows_.names[e.cat];
      if ((cat == "cpu_op" || cat == "user_annotation") && rows_.name(e).find(word) != std::string::npos) tids.insert(e.tid);
    }
    return tids.size() == 1 ? std::optional<uint32_t>(*tids.begin()) : std::nullopt;
  };
  const auto fwd = thread_of("forward"), bwd = thread_of("autograd");
  const bool remap = fwd && bwd && *fwd != *bwd;
  std::map<std::pair<uint32_t, uint32_t>, std::vector<const Event*>> threads;
  for (uint32_t i : kept) {
    const Event& e = rows_.events[i];
    threads[{e.pid, remap && e.tid == *bwd ? *fwd : e.tid}].push_back(&e);
  }
  std::vector<std::pair<uint32_t, uint32_t>> order;
  for (const auto& [key, evs] : threads) order.push_back(key);
  std::sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
    return std::make_pair(id_order(rows_.names[a.first]), id_order(rows_.names[a.second])) <
           std::make_pair(id_order(rows_.names[b.first]), id_order(rows_.names[b.second]));
  });
  for (const auto& key : order) {
    std::vector<const Event*>& evs = threads[key];
    // HTA walks CPU threads only: every event off-stream.
    if (std::all_of(evs.begin(), evs.end(), [](const Event* e) { return e->stream < 0; })) walk_thread(evs);
  }
}

// The thread's call tree from a sweep of starts and ends (HTA call_stack.py compare_events, for
// events longer than 0: by time, ends before starts, longer starts first then lower index, shorter
// ends first then higher index; an end pops the innermost open event), walked depth first.
void Graph::walk_thread(std::vector<const Event*>& evs) {
  struct Mark {
    std::tuple<int64_t, int, int64_t, int64_t> key;
    int64_t index;
    bool end;
  };
  std::vector<Mark> marks;
  for (const Event* e : evs) {
    marks.push_back({{e->ts, 1, -e->dur, e->index}, e->index, false});
    marks.push_back({{e->end(), 0, e->dur, -e->index}, e->index, true});
  }
  std::sort(marks.begin(), marks.end(), [](const Mark& a, const Mark& b) { return a.key < b.key; });
  std::unordered_map<int64_t, std::vector<int64_t>> children;
  std::unordered_map<int64_t, int64_t> parent;
  std::vector<int64_t> open;
  for (const Mark& m : marks) {
    if (!m.end) {
      const int64_t p = open.empty() ? -1 : open.back();
      children[p].push_back(m.index), parent[m.index] = p, open.push_back(m.index);
    } else if (!open.empty()) {
      open.pop_back();
    }
  }
  std::optional<uint32_t> last;
  int depth = 0;
  int64_t last_parent = -1;
  // Case 4 of HTA's _attribute_edge: an end followed by a start is time in their parent.
  auto attribution = [&](uint32_t u, uint32_t v) { return node_start[u] ? node_event[u] : !node_start[v] ? node_event[v] : last_parent; };
  auto enter = [&](int64_t ev) {
    const int64_t s = start_of(ev);
    if (s < 0) return;
    const auto n = static_cast<uint32_t>(s);
    if (last && !shares_lock(*last, n)) add(*last, n, depth == 0 ? CpEdge::dependency : CpEdge::operator_, false, attribution(*last, n));
    last = n, last_parent = parent[ev], ++depth;
  };
  auto leave = [&](int64_t ev) {
    const int64_t t = end_of(ev);
    if (t < 0) return;
    const auto n = static_cast<uint32_t>(t);
    const bool blocking = kBlockingCalls.count(rows_.name(*rows_.find(ev))) > 0;
    if (last && !shares_lock(*last, n)) add(*last, n, CpEdge::operator_, blocking, attribution(*last, n));
    last = n, last_parent = parent[ev], --depth;
  };
  // Depth first without recursion: (event, next child) frames.
  std::vector<std::pair<int64_t, size_t>> frames;
  for (int64_t root : children[-1]) {
    enter(root);
    frames.push_back({root, 0});
    while (!frames.empty()) {
      auto& [ev, next] = frames.back();
      const std::vector<int64_t>& kids = children[ev];
      if (next < kids.size()) {
        const int64_t child = kids[next++];
        enter(child);
        frames.push_back({child, 0});
      } else {
        leave(ev);
        frames.pop_back();
      }
    }
  }
}

}  // namespace kl::trace::cp
