// The critical path's GPU edges (HTA CPGraph._construct_graph_from_kernels): each op's span, how it
// waited to start (its launch, the op before it on the stream, a cudaStreamWaitEvent), and the
// syncs that made the CPU wait for it. Queue lengths: TraceCounters._get_queue_length_time_series.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "trace/cp_graph.h"

namespace kl::trace::cp {

namespace {
constexpr int64_t kKernelKernelLimitUs = 1500;  // HTA's KERNEL_KERNEL_DELAY_THRESHOLD_US
const std::set<std::string, std::less<>> kLaunchCalls = {
    "cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx", "cudaMemcpyAsync", "cudaMemsetAsync",
    "hipLaunchKernel",  "hipExtModuleLaunchKernel", "hipMemcpyAsync", "hipMemsetAsync", "hipMemcpyWithStream",
    "runFunction - job_prep_and_submit_for_execution"};

struct Launch {
  const Event* call;
  int64_t stream;
  uint32_t gpu;  // the op's pid
};

// Launch calls matched to a GPU op, by start time.
std::vector<Launch> launches(const Rows& r) {
  std::vector<const Event*> calls;
  for (const Event& e : r.events)
    if (e.ic > 0 && kLaunchCalls.count(r.name(e))) calls.push_back(&e);
  std::stable_sort(calls.begin(), calls.end(), [](const Event* a, const Event* b) { return a->ts < b->ts; });
  std::vector<Launch> out;
  for (const Event* c : calls)
    if (const Event* k = r.find(c->ic); k && k->stream != -1 && k->ic > 0) out.push_back({c, k->stream, k->pid});
  return out;
}

// Outstanding ops per stream: +1 at each launch call, -1 at each op's start; the value after each event.
std::unordered_map<int64_t, int64_t> queue_lengths(const Rows& r, const std::vector<Launch>& ls) {
  struct Step {
    int64_t ts;
    int kind;
    int64_t stream, index, delta;
  };
  std::vector<Step> steps;
  std::set<int64_t> corrs;
  for (const Launch& l : ls) steps.push_back({l.call->ts, 0, l.stream, l.call->index, +1}), corrs.insert(l.call->corr);
  for (const Event& e : r.events)
    if (e.stream != -1 && corrs.count(e.corr)) steps.push_back({e.ts, 1, e.stream, e.index, -1});
  std::stable_sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) { return std::tie(a.ts, a.kind) < std::tie(b.ts, b.kind); });
  std::unordered_map<int64_t, int64_t> depth, q;
  for (const Step& s : steps) q[s.index] = depth[s.stream] += s.delta;
  return q;
}

// cudaEventRecord correlation -> index of the last launch call on the recorded stream at or before it.
std::unordered_map<int64_t, int64_t> record_previous_launch(const Rows& r, const std::vector<Launch>& ls) {
  std::unordered_map<int64_t, std::pair<int64_t, uint32_t>> record_stream;  // from the sync events' wait_on_* args
  for (const Event& e : r.events)
    if (e.wait_stream > -1) record_stream.emplace(e.wait_corr, std::make_pair(e.wait_stream, e.pid));
  std::map<std::pair<int64_t, uint32_t>, std::vector<const Event*>> by_stream;
  for (const Launch& l : ls) by_stream[{l.stream, l.gpu}].push_back(l.call);
  std::unordered_map<int64_t, int64_t> out;
  for (const Event& rec : r.events) {
    if (r.name(rec) != "cudaEventRecord") continue;
    auto it = record_stream.find(rec.corr);
    if (it == record_stream.end()) continue;
    const std::vector<const Event*>& calls = by_stream[it->second];
    auto after = std::upper_bound(calls.begin(), calls.end(), rec.ts, [](int64_t ts, const Event* c) { return ts < c->ts; });
    out[rec.corr] = after == calls.begin() ? -1 : (*(after - 1))->index;
  }
  return out;
}

// cudaStreamWaitEvent index -> index of the next launch call from its thread onto the waiting stream.
std::unordered_map<int64_t, int64_t> wait_next_launch(const Rows& r, const std::vector<Launch>& ls) {
  std::map<std::tuple<int64_t, uint32_t, uint32_t>, std::vector<const Event*>> by_thread;
  for (const Launch& l : ls) by_thread[{l.stream, l.call->pid, l.call->tid}].push_back(l.call);
  std::unordered_map<int64_t, int64_t> out;
  for (const Event& w : r.events) {
    if (r.name(w) != "cudaStreamWaitEvent" || w.ic <= 0) continue;
    const Event* k = r.find(w.ic);
    if (!k || k->stream == -1) continue;
    const std::vector<const Event*>& calls = by_thread[{k->stream, w.pid, w.tid}];
    auto next = std::lower_bound(calls.begin(), calls.end(), w.ts, [](const Event* c, int64_t ts) { return c->ts < ts; });
    out[w.index] = next == calls.end() ? -1 : (*next)->index;
  }
  return out;
}
}  // namespace

void Graph::gpu_edges(const std::vector<uint32_t>& kept) {
  const std::vector<Launch> ls = launches(rows_);
  const auto q = queue_lengths(rows_, ls);
  const auto prev_launch = record_previous_launch(rows_, ls);
  const auto next_launch = wait_next_launch(rows_, ls);
  auto queue = [&](int64_t index) {
    auto it = q.find(index);
    return it == q.end() ? int64_t{-1} : it->second;
  };
  auto is_sync = [&](const Event& e) { return rows_.names[e.cat] == "cuda_sync"; };
  std::vector<const Event*> ops;
  for (uint32_t i : kept) {
    const Event& e = rows_.events[i];
    const std::string& n = rows_.name(e);
    if ((e.stream != -1 || n == "Event Sync" || n == "Context Sync") && e.ic >= 0) ops.push_back(&e);
  }
  // Syncs sort by their end: a Stream Sync overlapping a memcpy on its stream waits for it.
  std::stable_sort(ops.begin(), ops.end(), [&](const Event* a, const Event* b) {
    return (is_sync(*a) ? a->end() : a->ts) < (is_sync(*b) ? b->end() : b->ts);
  });
  std::vector<std::pair<int64_t, uint32_t>> last;   // (stream, end node of its last op), streams in first-seen order
  auto last_on = [&](int64_t stream) {
    return std::find_if(last.begin(), last.end(), [&](const auto& p) { return p.first == stream; });
  };
  std::unordered_map<int64_t, int64_t> kernel_sync;  // op index -> the op it waits for (cudaStreamWaitEvent)
  for (const Event* op : ops) {
    const Event& e = *op;
    const std::string& name = rows_.name(e);
    if (is_sync(e)) {
      if (name == "Stream Wait Event" || name == "Event Sync") {
        auto pl = prev_launch.find(e.wait_corr);
        if (pl == prev_launch.end() || pl->second == -1) continue;
        const int64_t src_kernel = rows_.find(pl->second)->ic;
        if (name == "Stream Wait Event") {
          auto nl = next_launch.find(e.ic);
          if (nl != next_launch.end() && nl->second >= 0) kernel_sync[rows_.find(nl->second)->ic] = src_kernel;
        } else if (end_of(src_kernel) >= 0 && end_of(e.ic) >= 0) {
          add(static_cast<uint32_t>(end_of(src_kernel)), static_cast<uint32_t>(end_of(e.ic)), CpEdge::sync_dependency);
        }
      } else if ((name == "Stream Sync" || name == "Context Sync") && end_of(e.ic) >= 0) {
        const auto cpu_end = static_cast<uint32_t>(end_of(e.ic));
        if (name == "Context Sync") {
          for (const auto& [stream, n] : last) add(n, cpu_end, CpEdge::sync_dependency);
        } else if (auto it = last_on(e.stream); it != last.end()) {
          add(it->second, cpu_end, CpEdge::sync_dependency);
        }
      }
      continue;
    }
    if (start_of(e.index) < 0) continue;
    const auto s = static_cast<uint32_t>(start_of(e.index)), t = static_cast<uint32_t>(end_of(e.index));
    add(s, t, CpEdge::operator_);
    std::optional<int64_t> src_end;  // the end of the op a cudaStreamWaitEvent made this one wait for
    if (auto ks = kernel_sync.find(e.index); ks != kernel_sync.end()) {
      if (end_of(ks->second) >= 0) src_end = end_of(ks->second), add(static_cast<uint32_t>(*src_end), s, CpEdge::sync_dependency);
      kernel_sync.erase(ks);
    }
    const Event* call = rows_.find(e.ic);
    const int64_t launch_node = start_of(e.ic);
    auto prev = last_on(e.stream);
    const bool has_prev = prev != last.end();
    bool launched = false;
    if (queue(e.ic) == 1 && queue(e.index) == 0 && launch_node >= 0 && call &&
        (!has_prev || node_ts[prev->second] < call->ts) && (!src_end || node_ts[*src_end] < call->ts)) {
      add(static_cast<uint32_t>(launch_node), s, CpEdge::kernel_launch_delay);
      launched = true;
    } else if (has_prev && node_ts[s] - node_ts[prev->second] < kKernelKernelLimitUs &&
               (!src_end || node_ts[*src_end] < node_ts[prev->second])) {
      add(prev->second, s, CpEdge::kernel_kernel_delay);
    }
    if (launch_edges_ && !launched && launch_node >= 0) add(static_cast<uint32_t>(launch_node), s, CpEdge::kernel_launch_delay, true);
    if (has_prev) prev->second = t;
    else last.emplace_back(e.stream, t);
  }
}

}  // namespace kl::trace::cp
