// The longest path of the critical-path graph (cp_graph.h) and its breakdown, text and JSON.
#include "trace/critical_path.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <optional>

#include "kernelab/error.h"
#include "trace/analysis.h"
#include "trace/cp_graph.h"

namespace kl::trace {

const char* cp_edge_name(CpEdge e) {
  switch (e) {
    case CpEdge::operator_: return "operator";
    case CpEdge::dependency: return "dependency";
    case CpEdge::kernel_launch_delay: return "kernel_launch_delay";
    case CpEdge::kernel_kernel_delay: return "kernel_kernel_delay";
    case CpEdge::sync_dependency: return "sync_dependency";
  }
  return "?";
}

namespace {
std::optional<int64_t> whole_number(std::string_view s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

// HTA's bound_by for an operator edge: by the stream of the event its time is attributed to.
std::string bound_of(const cp::Rows& rows, const cp::Edge& e) {
  if (e.type == CpEdge::kernel_kernel_delay) return "gpu_kernel_kernel_overhead";
  if (e.type == CpEdge::kernel_launch_delay) return "gpu_kernel_launch_overhead";
  if (e.type != CpEdge::operator_) return "sync_or_dependency";
  const cp::Event* ev = rows.find(e.attributed);
  if (!ev || ev->stream < 0) return "cpu_bound";
  const std::string& n = rows.name(*ev);  // hta/common/types.py CommunicateKernelGroupingPattern
  const bool comm = n.rfind("nccl", 0) == 0 || n.rfind("hip", 0) == 0 || n.rfind("hccl", 0) == 0 || n.find("ncclKernel") != std::string::npos;
  return comm ? "gpu_communication_bound" : "gpu_compute_bound";
}

// Kahn's algorithm by generations over the nodes in first-touched order, then each node's first
// best predecessor: networkx.topological_generations and dag_longest_path, step for step.
std::vector<uint32_t> longest_path(const cp::Graph& g, int64_t& length) {
  std::vector<uint32_t> indeg(g.node_ts.size()), topo;
  for (uint32_t n : g.appearance) indeg[n] = static_cast<uint32_t>(g.pred[n].size());
  for (uint32_t n : g.appearance)
    if (indeg[n] == 0) topo.push_back(n);
  for (size_t begin = 0, end = topo.size(); begin < end; begin = end, end = topo.size())  // [begin, end): a generation
    for (size_t k = begin; k < end; ++k)
      for (uint32_t id : g.succ[topo[k]])
        if (--indeg[g.edges[id].v] == 0) topo.push_back(g.edges[id].v);
  if (topo.size() != g.appearance.size()) bad_input("the critical-path graph has a cycle (the trace's times contradict its dependencies)");
  struct Best {
    int64_t dist = 0;
    int64_t via = -1;  // the edge into the node on its longest path
  };
  std::vector<Best> best(g.node_ts.size());
  for (uint32_t v : topo)
    for (size_t i = 0; i < g.pred[v].size(); ++i) {
      const cp::Edge& e = g.edges[g.pred[v][i]];
      const int64_t cand = best[e.u].dist + std::max<int64_t>(e.weight, 0);
      if (i == 0 || cand > best[v].dist) best[v] = {cand, g.pred[v][i]};
    }
  std::vector<uint32_t> path;
  if (topo.empty()) return path;
  uint32_t end = topo.front();
  for (uint32_t v : topo)
    if (best[v].dist > best[end].dist) end = v;
  length = best[end].dist;
  for (uint32_t v = end;;) {
    path.push_back(v);
    if (best[v].via < 0) break;
    v = g.edges[static_cast<size_t>(best[v].via)].u;
  }
  std::reverse(path.begin(), path.end());
  return path;
}
}  // namespace

CriticalPathSpec parse_critical_path(std::string_view text) {
  CriticalPathSpec s;
  s.text = text;
  if (text == "all") return s.whole = true, s;
  if (auto n = whole_number(text)) return s.step = true, s.annotation = fmt::format("ProfilerStep#{}", *n), s;
  const size_t at = text.rfind('@');
  s.annotation = text.substr(0, at);
  if (at != std::string_view::npos) {
    const std::string_view inst = text.substr(at + 1);
    const size_t dash = inst.find('-');
    const auto a = whole_number(inst.substr(0, dash));
    const auto b = dash == std::string_view::npos ? a : whole_number(inst.substr(dash + 1));
    if (!a || !b || *a > *b) bad_input(fmt::format("--critical-path '{}': after @ give an instance K or a range A-B (A <= B, from 0)", text));
    s.first = *a, s.last = *b;
  }
  if (s.annotation.empty())
    bad_input(fmt::format("--critical-path '{}': give a step number N, an annotation NAME[@K|@A-B] or all", text));
  return s;
}

CriticalPath critical_path(const std::string& file, const CriticalPathOptions& opt) {
  cp::Rows rows = cp::load_rows(file);
  if (opt.hta_default_events) cp::keep_hta_default(rows);
  const auto [start, end] = cp::iteration_window(rows, opt.spec);
  const std::vector<uint32_t> kept = cp::clip(rows, start, end);
  const cp::Graph g(rows, kept, opt.launch_edges);
  CriticalPath r;
  r.spec = opt.spec.text, r.launch_edges = opt.launch_edges;
  r.window_start_us = start, r.window_end_us = end, r.events = kept.size();
  r.nodes = g.node_ts.size(), r.graph_nodes = g.appearance.size(), r.edges = g.edges.size();
  for (const cp::Edge& e : g.edges) ++r.edge_counts[static_cast<int>(e.type)], r.negative_edges += e.weight < 0;
  const std::vector<uint32_t> path = longest_path(g, r.length_us);
  r.path_nodes = path.size();
  std::vector<int64_t> events;
  for (uint32_t n : path) events.push_back(g.node_event[n]);
  std::sort(events.begin(), events.end());
  r.path_events = static_cast<uint64_t>(std::unique(events.begin(), events.end()) - events.begin());
  std::map<std::pair<std::string, std::string>, CriticalPathItem> items;
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    const int64_t id = [&] {
      for (uint32_t eid : g.pred[path[i + 1]])
        if (g.edges[eid].u == path[i]) return static_cast<int64_t>(eid);
      return int64_t{-1};
    }();
    const cp::Edge& e = g.edges[id];
    const int64_t w = std::max<int64_t>(e.weight, 0);
    const std::string bound = bound_of(rows, e);
    r.by_edge_type_us[static_cast<int>(e.type)] += w;
    ++r.path_edge_counts[static_cast<int>(e.type)];
    r.by_bound_us[bound] += w;
    if (e.type == CpEdge::sync_dependency) {
      ++r.sync_edges_on_path;
      const cp::Event* cpu = rows.find(g.node_event[e.v]);
      if (cpu && cpu->stream == -1 && !g.node_start[e.v]) r.sync_wait_us += cpu->dur;
    }
    if (w == 0) continue;
    const cp::Event* ev = rows.find(e.type == CpEdge::kernel_launch_delay ? g.node_event[e.v] : e.attributed);
    const std::string name = ev ? rows.name(*ev) : "(outside any event)";
    CriticalPathItem& item = items[{name, bound}];
    item.name = name, item.bound = bound, item.us += w, ++item.edges;
  }
  for (auto& [key, item] : items) r.top.push_back(item);
  // Most time first, then by name and bound (the map's order, kept by the stable sort).
  std::stable_sort(r.top.begin(), r.top.end(), [](const auto& a, const auto& b) { return a.us > b.us; });
  if (opt.top > 0 && r.top.size() > static_cast<size_t>(opt.top)) r.top.resize(static_cast<size_t>(opt.top));
  return r;
}

std::string format_critical_path(const CriticalPath& cp) {
  auto t = [](int64_t us) { return format_ns(static_cast<double>(us) * 1e3); };
  auto pct = [&](int64_t us) { return cp.length_us > 0 ? fmt::format("{:.1f}%", 100.0 * static_cast<double>(us) / static_cast<double>(cp.length_us)) : std::string("-"); };
  std::string s = fmt::format("\ncritical path of {} (HTA's definition, {}; window {} from its start)\n", cp.spec,
                              cp.launch_edges ? "with zero-weight launch edges" : "HTA's default edges", t(cp.window_end_us - cp.window_start_us));
  s += fmt::format("  length {} over {} nodes ({} events); graph: {} events, {} nodes ({} with an edge), {} edges\n", t(cp.length_us),
                   cp.path_nodes, cp.path_events, cp.events, cp.nodes, cp.graph_nodes, cp.edges);
  s += "  bound by:";
  for (const auto& [bound, us] : cp.by_bound_us)
    if (bound != "sync_or_dependency") s += fmt::format("  {} {} ({})", bound, t(us), pct(us));
  s += "\n  by edge type:";
  for (int i = 0; i < kCpEdgeTypes; ++i)
    s += fmt::format("  {} {} ({} edges, of {})", cp_edge_name(static_cast<CpEdge>(i)), t(cp.by_edge_type_us[i]), cp.path_edge_counts[i],
                     cp.edge_counts[i]);
  s += fmt::format("\n  sync: {} sync edges on the path; the CPU blocked {} in the sync calls they end in (HTA weighs sync "
                   "edges 0: a wait counts as the GPU work it waited for)\n",
                   cp.sync_edges_on_path, t(cp.sync_wait_us));
  if (cp.negative_edges) s += fmt::format("  {} edges end before they start (rounded times) and count as 0\n", cp.negative_edges);
  s += "  on the path, most time first:\n";
  for (const CriticalPathItem& i : cp.top) {
    s += fmt::format("    {:>10}  {:>6}  {:<26} {}\n", t(i.us), pct(i.us), i.bound, shortened(i.name, 90));
  }
  return s;
}

nlohmann::json critical_path_json(const CriticalPath& cp) {
  nlohmann::json by_type = nlohmann::json::object(), counts = nlohmann::json::object(), on_path = nlohmann::json::object();
  nlohmann::json top = nlohmann::json::array();
  for (int i = 0; i < kCpEdgeTypes; ++i) {
    by_type[cp_edge_name(static_cast<CpEdge>(i))] = cp.by_edge_type_us[i];
    counts[cp_edge_name(static_cast<CpEdge>(i))] = cp.edge_counts[i];
    on_path[cp_edge_name(static_cast<CpEdge>(i))] = cp.path_edge_counts[i];
  }
  for (const CriticalPathItem& i : cp.top) top.push_back({{"name", i.name}, {"bound", i.bound}, {"us", i.us}, {"edges", i.edges}});
  return {{"spec", cp.spec}, {"launch_edges", cp.launch_edges}, {"window_start_us", cp.window_start_us},
          {"window_end_us", cp.window_end_us}, {"events", cp.events}, {"nodes", cp.nodes}, {"graph_nodes", cp.graph_nodes},
          {"edges", cp.edges}, {"edge_counts", counts}, {"path_nodes", cp.path_nodes}, {"path_events", cp.path_events}, {"path_edge_counts", on_path},
          {"length_us", cp.length_us}, {"by_edge_type_us", by_type}, {"by_bound_us", cp.by_bound_us},
          {"sync_edges_on_path", cp.sync_edges_on_path}, {"sync_wait_us", cp.sync_wait_us},
          {"negative_weight_edges", cp.negative_edges}, {"top", top}};
}

}  // namespace kl::trace
