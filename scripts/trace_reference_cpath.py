"""The critical path of `kernelab trace analyze --critical-path`, computed independently (stdlib only).

The graph follows HTA's definition (hta/analyzers/critical_path_analysis.py, CPGraph, with the
zero-weight launch edges its tests enable): a start and an end node per CPU operator, CUDA
runtime/driver call and GPU op; edges along each CPU thread's call stack, between calls that hold
the CUDA runtime lock, launch -> kernel, kernel -> kernel on a stream, and GPU -> CPU / GPU -> GPU
synchronisation. The longest path is a plain dynamic programme over Kahn's topological order (the
order networkx.dag_longest_path walks, so ties resolve the same way).
"""
import decimal
import gzip
import json
import math
import re
from collections import defaultdict

OP, DEP, LAUNCH, KK, SYNC = "operator", "dependency", "kernel_launch_delay", "kernel_kernel_delay", "sync_dependency"
NODE_CATS = {"cpu_op", "cuda_runtime", "cuda_driver", "Operator", "Runtime", "Driver"}
LOCK_CALLS = {"cudaHostAlloc", "cudaLaunchKernel", "cudaMemcpyAsync"}
BLOCKING_CALLS = {"cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventQuery", "cudaEventSynchronize",
                  "cudaMemcpy", "cudaMemcpyAsync"}
LAUNCH_CALLS = {"cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx", "cudaMemcpyAsync",
                "cudaMemsetAsync", "hipLaunchKernel", "hipExtModuleLaunchKernel", "hipMemcpyAsync", "hipMemsetAsync",
                "hipMemcpyWithStream", "runFunction - job_prep_and_submit_for_execution"}
DEVICE_SYNCS = {"Event Sync", "Context Sync"}
KERNEL_KERNEL_LIMIT_US = 1500
COMM_RE = re.compile(r"(^nccl.*)|(^hip)|(^hccl)|(.*ncclKernel.*)")


def _int(v, fallback):
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if isinstance(v, decimal.Decimal):
        return int(v) if v.is_finite() else fallback
    if isinstance(v, str):
        try:
            return int(v)
        except ValueError:
            return fallback
    return fallback


class Ev:
    __slots__ = ("i", "ts", "dur", "pid", "tid", "cat", "name", "stream", "corr", "ic", "wait_stream", "wait_corr")


def load(path):
    """Events with a cat and a dur (HTA's rows), times in whole us: start rounded up, end down, in
    float64 arithmetic as HTA rounds them (1.7e15 us holds quarter-us steps only)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        doc = json.load(f, parse_float=decimal.Decimal)
    events = []
    for i, e in enumerate(doc if isinstance(doc, list) else doc.get("traceEvents", [])):
        if not isinstance(e, dict) or e.get("cat") is None or e.get("dur") is None or e.get("cat") == "Trace":
            continue
        ts = float(e.get("ts", 0))
        end = ts + float(e["dur"])
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        ev = Ev()
        ev.i, ev.ts = i, math.ceil(ts)
        ev.dur = math.floor(end) - ev.ts
        ev.pid, ev.tid, ev.cat, ev.name = e.get("pid"), e.get("tid"), e["cat"], e.get("name", "")
        ev.stream = _int(args.get("stream", -1), -1)
        ev.corr = _int(args.get("correlation", -1), -1)
        ev.wait_stream = _int(args.get("wait_on_stream", -1), -1)
        ev.wait_corr = _int(args.get("wait_on_cuda_event_record_corr_id", -1), -1)
        events.append(ev)
    _link(events)
    return events


def _on_gpu(e):
    return (e.stream >= 0 and e.corr >= 0) or e.name in DEVICE_SYNCS


def _link(events):
    """ic: the index of the correlated event on the other side (CPU <-> GPU), -1 none, 0 unmatched."""
    gpu_by_corr = defaultdict(list)
    for e in events:
        e.ic = min(e.corr, 0)
        if e.corr != -1 and _on_gpu(e):
            gpu_by_corr[e.corr].append(e)
    for e in events:
        if e.corr != -1 and not _on_gpu(e):
            for g in gpu_by_corr.get(e.corr, []):
                e.ic, g.ic = g.i, e.i


def hta_default_events(events):
    """HTA's default event set (Trace._filter_irrelevant_gpu_kernels, include_last_profiler_step=False):
    with two or more ProfilerStep#N names, the non-GPU events that start before the last step starts
    and the GPU events that share a correlation with one of them; GPU events first, as HTA orders its rows."""
    steps = re.compile(r"^ProfilerStep#(\d+)")
    if len({e.name for e in events if steps.match(e.name)}) < 2:
        return events
    cpu = [e for e in events if not _on_gpu(e)]
    last_start = max(e.ts for e in cpu if steps.match(e.name))
    cpu = [e for e in cpu if e.ts < last_start]
    corrs = {e.corr for e in cpu}
    return [e for e in events if _on_gpu(e) and e.corr in corrs] + cpu


def parse_spec(text):
    """--critical-path's argument: all, N (ProfilerStep#N), NAME, NAME@K or NAME@A-B."""
    if text == "all":
        return ("all", "", 0, 0)
    if text.isdigit():
        return ("step", f"ProfilerStep#{int(text)}", 0, 0)
    name, _, inst = text.rpartition("@") if "@" in text else (text, "", "0")
    a, _, b = inst.partition("-")
    return ("annotation", name, int(a), int(b or a))


def window(events, spec):
    """(start, end) of the iteration spec names; None if no event matches."""
    kind, annotation, first, last = spec
    if kind == "all":
        return (min(e.ts for e in events), max(e.ts + e.dur for e in events)) if events else None
    if kind == "step":
        hits = [e for e in events if e.name == annotation and e.cat != "gpu_user_annotation"][:1]
    else:
        hits = [e for e in events if annotation in e.name][first:last + 1]
    if not hits:
        return None
    return min(e.ts for e in hits), max(e.ts + e.dur for e in hits)


def clip(events, start, end):
    """CPU events starting in the window (dur > 0), GPU events whose launch does."""
    by_index = {e.i: e for e in events}
    launcher = {}
    for e in events:
        if e.stream == -1:
            launcher.setdefault(e.ic, []).append(e)
    kept = []
    for e in events:
        if e.stream == -1:
            if start <= e.ts <= end and e.dur > 0:
                kept.append(e)
        elif e.name == "Stream Wait Event" or any(start <= c.ts <= end and c.dur > 0 for c in launcher.get(e.i, [])):
            kept.append(e)
    return kept, by_index


class Graph:
    def __init__(self):
        self.edges = {}        # (u, v) -> [type, weight]; a repeated edge overwrites, keeping its place
        self.succ = defaultdict(list)
        self.pred = defaultdict(list)
        self.order = {}        # node -> first appearance
        self.attr = {}         # (u, v) -> attributed event index

    def add(self, u, v, kind, weight):
        for n in (u, v):
            self.order.setdefault(n, len(self.order))
        if (u, v) not in self.edges:
            self.succ[u].append(v)
            self.pred[v].append(u)
        self.edges[(u, v)] = [kind, weight]


class CriticalPath:
    def __init__(self, events, kept, by_index, launch_edges):
        self.full, self.by_index, self.launch_edges = events, by_index, launch_edges
        node_events = [e for e in kept if e.cat in NODE_CATS or (e.stream != -1 and e.ic >= 0)]
        marks = sorted([(e.ts, e.i, 0, e) for e in node_events] + [(e.ts + e.dur, e.i, 1, e) for e in node_events],
                       key=lambda m: m[:3])
        self.node_ts, self.node_ev, self.node_start = [], [], []
        self.start_of, self.end_of = {}, {}
        for n, (ts, i, is_end, e) in enumerate(marks):
            self.node_ts.append(ts), self.node_ev.append(i), self.node_start.append(not is_end)
            (self.end_of if is_end else self.start_of)[i] = n
        self.g = Graph()
        self.kept = kept
        self._lock_edges()
        self._stack_edges()
        self._gpu_edges()

    def _edge(self, u, v, kind, zero=False, attribute=None):
        w = 0 if kind in (DEP, SYNC) or zero else self.node_ts[v] - self.node_ts[u]
        self.g.add(u, v, kind, w)
        if kind in (OP, KK) and attribute is not None:
            self.g.attr[(u, v)] = attribute
        elif kind in (OP, KK):
            self.g.attr[(u, v)] = (self.node_ev[u] if kind == KK or self.node_start[u]
                                   else self.node_ev[v] if not self.node_start[v] else None)

    def _is_lock(self, n):
        return self.by_index[self.node_ev[n]].name in LOCK_CALLS

    def _lock_edges(self):
        """Calls that take the CUDA runtime lock run one at a time: chain them by their ends."""
        pending, last = [], None
        for n in range(len(self.node_ts)):
            if not self._is_lock(n):
                continue
            if self.node_start[n]:
                pending.append(n)
            else:
                while pending:
                    p = pending.pop()
                    self._edge(p, n, OP if self.node_ev[p] == self.node_ev[n] else DEP)
                if last is not None and not self.node_start[last]:
                    self._edge(last, n, DEP)
            last = n

    def _shares_lock(self, a, b):
        return self._is_lock(a) and self._is_lock(b) and (self.node_start[a] or not self.node_start[b])

    def _stack_edges(self):
        fwd, bwd = self._tid_of("forward"), self._tid_of("autograd")
        remap = {bwd: fwd} if fwd is not None and bwd is not None and fwd != bwd else {}
        threads = defaultdict(list)
        for e in self.kept:
            threads[(e.pid, remap.get(e.tid, e.tid))].append(e)
        for key in sorted(threads, key=lambda k: tuple((type(x).__name__, x) for x in k)):
            evs = threads[key]
            if not all(e.stream < 0 for e in evs):  # HTA walks CPU threads only (every event off-stream)
                continue
            self._walk(self._call_tree(evs))

    def _tid_of(self, word):
        tids = {e.tid for e in self.kept if word in e.name and e.cat in ("cpu_op", "user_annotation")}
        return next(iter(tids)) if len(tids) == 1 else None

    @staticmethod
    def _call_tree(evs):
        """Parents and children from a sweep of starts and ends in HTA's call_stack.compare_events order,
        which for events of positive length is: time; ends before starts; starts longer first, then lower
        index; ends shorter first, then higher index. An end pops the innermost open event."""
        marks = []
        for e in evs:
            marks.append(((e.ts, 1, -e.dur, e.i), e.i, False))
            marks.append(((e.ts + e.dur, 0, e.dur, -e.i), e.i, True))
        marks.sort(key=lambda m: m[0])
        children, parent, stack = defaultdict(list), {}, []
        for _, i, is_end in marks:
            if not is_end:
                p = stack[-1] if stack else -1
                children[p].append(i)
                parent[i] = p
                stack.append(i)
            elif stack:
                stack.pop()
        return children, parent

    def _walk(self, tree):
        children, parent = tree
        state = {"last": None, "depth": 0, "last_parent": None}

        def visit(i):
            has = i in self.start_of
            if has:
                s = self.start_of[i]
                if state["last"] is not None and not self._shares_lock(state["last"], s):
                    kind = DEP if state["depth"] == 0 else OP
                    self._edge(state["last"], s, kind, attribute=self._case4(state["last"], s, state["last_parent"]))
                state["last"], state["last_parent"] = s, parent[i]
                state["depth"] += 1
            for c in children.get(i, []):
                visit(c)
            if has:
                t = self.end_of[i]
                if state["last"] is not None and not self._shares_lock(state["last"], t):
                    blocking = self.by_index[i].name in BLOCKING_CALLS
                    self._edge(state["last"], t, OP, zero=blocking,
                               attribute=self._case4(state["last"], t, state["last_parent"]))
                state["last"], state["last_parent"] = t, parent[i]
                state["depth"] -= 1

        import sys
        sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))
        for c in children.get(-1, []):
            visit(c)

    def _case4(self, u, v, parent_event):
        if self.node_start[u]:
            return self.node_ev[u]
        if not self.node_start[v]:
            return self.node_ev[v]
        return parent_event

    def _launches(self):
        """Launch calls matched to a GPU op, in start order: (index, launch id, stream, gpu pid)."""
        calls = sorted((e for e in self.full if e.name in LAUNCH_CALLS and e.ic > 0), key=lambda e: e.ts)
        out = []
        for e in calls:
            k = self.by_index.get(e.ic)
            if k is not None and k.stream != -1 and k.ic > 0:
                out.append((e, len(out), k.stream, k.pid))
        return out

    def _record_previous_launch(self, launches):
        """cudaEventRecord correlation -> index of the last launch on its stream before the record."""
        record_stream = {}
        for e in self.full:
            if e.wait_stream > -1:
                record_stream.setdefault(e.wait_corr, (e.wait_stream, e.pid))
        records = sorted((e for e in self.full if e.name == "cudaEventRecord" and e.corr in record_stream),
                         key=lambda e: e.ts)
        out = {}
        for r in records:
            stream, gpu = record_stream[r.corr]
            prev = [c for (c, lid, s, g) in launches if s == stream and g == gpu and c.ts <= r.ts]
            out[r.corr] = prev[-1].i if prev else -1
        return out

    def _wait_next_launch(self, launches):
        """cudaStreamWaitEvent index -> index of the next launch on the waiting stream from its thread."""
        out = {}
        for w in self.full:
            if w.name != "cudaStreamWaitEvent" or w.ic <= 0:
                continue
            k = self.by_index.get(w.ic)
            if k is None or k.stream == -1:
                continue
            nxt = [c for (c, lid, s, g) in launches
                   if s == k.stream and c.pid == w.pid and c.tid == w.tid and c.ts >= w.ts]
            out[w.i] = nxt[0].i if nxt else -1
        return out

    def _queue_lengths(self, launches):
        """Outstanding ops per stream after each launch call (+1) and each GPU op start (-1)."""
        corrs = {c.corr for (c, _, _, _) in launches}
        marks = [(c.ts, 0, s, c.i, +1) for (c, _, s, _) in launches]
        marks += [(e.ts, 1, e.stream, e.i, -1) for e in self.full if e.stream != -1 and e.corr in corrs]
        marks.sort(key=lambda m: (m[0], m[1]))
        q, depth = {}, defaultdict(int)
        for ts, _, s, i, d in marks:
            depth[s] += d
            q[i] = depth[s]
        return q

    def _gpu_edges(self):
        launches = self._launches()
        q = self._queue_lengths(launches)
        prev_launch = self._record_previous_launch(launches)
        next_launch = self._wait_next_launch(launches)
        rows = [e for e in self.kept if (e.stream != -1 or e.name in DEVICE_SYNCS) and e.ic >= 0]
        rows.sort(key=lambda e: e.ts + e.dur if e.cat == "cuda_sync" else e.ts)
        last, kernel_sync = {}, {}
        for e in rows:
            if e.cat == "cuda_sync":
                self._sync(e, last, kernel_sync, prev_launch, next_launch)
                continue
            if e.i not in self.start_of:
                continue
            s, t = self.start_of[e.i], self.end_of[e.i]
            self._edge(s, t, OP)
            src_end = self.end_of.get(kernel_sync.pop(e.i, None))  # the op a cudaStreamWaitEvent waits for
            if src_end is not None:
                self._edge(src_end, s, SYNC)
            launch = self.by_index.get(e.ic)
            launch_ts = launch.ts if launch is not None else None
            prev = last.get(e.stream)
            launched = False
            if (q.get(e.ic) == 1 and q.get(e.i) == 0 and e.ic in self.start_of
                    and (prev is None or self.node_ts[prev] < launch_ts)
                    and (src_end is None or self.node_ts[src_end] < launch_ts)):
                self._edge(self.start_of[e.ic], s, LAUNCH)
                launched = True
            elif (prev is not None and self.node_ts[s] - self.node_ts[prev] < KERNEL_KERNEL_LIMIT_US
                  and (src_end is None or self.node_ts[src_end] < self.node_ts[prev])):
                self._edge(prev, s, KK)
            if self.launch_edges and not launched and e.ic in self.start_of:
                self._edge(self.start_of[e.ic], s, LAUNCH, zero=True)
            last[e.stream] = t

    def _sync(self, e, last, kernel_sync, prev_launch, next_launch):
        if e.name in ("Stream Wait Event", "Event Sync"):
            src_launch = prev_launch.get(e.wait_corr, -1)
            if src_launch == -1:
                return
            src_kernel = self.by_index[src_launch].ic
            if e.name == "Stream Wait Event":
                dest_launch = next_launch.get(e.ic, -1)
                if dest_launch >= 0:
                    kernel_sync[self.by_index[dest_launch].ic] = src_kernel
            elif src_kernel in self.end_of and e.ic in self.end_of:
                self._edge(self.end_of[src_kernel], self.end_of[e.ic], SYNC)
            return
        if e.name not in ("Stream Sync", "Context Sync") or e.ic not in self.end_of:
            return
        nodes = list(last.values()) if e.name == "Context Sync" else [last.get(e.stream)]
        for n in nodes:
            if n is not None:
                self._edge(n, self.end_of[e.ic], SYNC)

    def longest_path(self):
        """Kahn's generations, then for each node its best predecessor (first of equals)."""
        g = self.g
        nodes = sorted(g.order, key=g.order.get)
        indeg = {n: len(g.pred[n]) for n in nodes}
        gen = [n for n in nodes if indeg[n] == 0]
        topo = []
        while gen:
            topo += gen
            nxt = []
            for n in gen:
                for c in g.succ[n]:
                    indeg[c] -= 1
                    if indeg[c] == 0:
                        nxt.append(c)
            gen = nxt
        if len(topo) != len(nodes):
            raise ValueError("the dependency graph has a cycle")
        if not topo:
            return [], 0
        dist = {}
        for v in topo:
            best = (0, v)
            for i, u in enumerate(g.pred[v]):
                cand = (dist[u][0] + max(g.edges[(u, v)][1], 0), u)
                if i == 0 or cand[0] > best[0]:
                    best = cand
            dist[v] = best if best[0] >= 0 else (0, v)
        end = max(topo, key=lambda n: dist[n][0])
        path = [end]
        while dist[path[-1]][1] != path[-1]:
            path.append(dist[path[-1]][1])
        return path[::-1], dist[end][0]

    def bound_by(self, u, v):
        kind, _ = self.g.edges[(u, v)]
        if kind == KK:
            return "gpu_kernel_kernel_overhead"
        if kind == LAUNCH:
            return "gpu_kernel_launch_overhead"
        if kind != OP:
            return "sync_or_dependency"
        e = self.by_index.get(self.g.attr.get((u, v)))
        if e is None or e.stream < 0:
            return "cpu_bound"
        return "gpu_communication_bound" if COMM_RE.match(e.name) else "gpu_compute_bound"


def critical_path(path, spec="all", complete=False, launch_edges=False, top=10):
    """The figures `trace analyze --critical-path SPEC --json` reports under "critical_path" (us)."""
    events = load(path)
    if complete:
        events = hta_default_events(events)
    w = window(events, parse_spec(spec))
    if w is None:
        return None
    kept, by_index = clip(events, *w)
    cp = CriticalPath(events, kept, by_index, launch_edges)
    nodes, length = cp.longest_path()
    by_type, by_bound, items, on_path = defaultdict(int), defaultdict(int), defaultdict(lambda: [0, 0]), defaultdict(int)
    sync_edges = sync_wait = 0
    for u, v in zip(nodes, nodes[1:]):
        kind, weight = cp.g.edges[(u, v)]
        weight, bound = max(weight, 0), cp.bound_by(u, v)
        by_type[kind] += weight
        by_bound[bound] += weight
        on_path[kind] += 1
        if kind == SYNC:
            sync_edges += 1
            cpu = by_index.get(cp.node_ev[v])
            if cpu is not None and cpu.stream == -1 and not cp.node_start[v]:
                sync_wait += cpu.dur
        if weight:
            ev = by_index.get(cp.node_ev[v] if kind == LAUNCH else cp.g.attr.get((u, v)))
            item = items[(ev.name if ev is not None else "(outside any event)", bound)]
            item[0] += weight
            item[1] += 1
    ranked = sorted(items.items(), key=lambda kv: (-kv[1][0], kv[0]))
    return {"window_start_us": w[0], "window_end_us": w[1], "events": len(kept), "nodes": len(cp.node_ts),
            "graph_nodes": len(cp.g.order), "edges": len(cp.g.edges),
            "edge_counts": {k: sum(1 for t, _ in cp.g.edges.values() if t == k) for k in (OP, DEP, LAUNCH, KK, SYNC)},
            "path_nodes": len(nodes), "path_events": len({cp.node_ev[n] for n in nodes}), "length_us": length,
            "path_edge_counts": {k: on_path.get(k, 0) for k in (OP, DEP, LAUNCH, KK, SYNC)},
            "by_edge_type_us": {k: by_type.get(k, 0) for k in (OP, DEP, LAUNCH, KK, SYNC)}, "by_bound_us": dict(by_bound),
            "sync_edges_on_path": sync_edges, "sync_wait_us": sync_wait,
            "negative_weight_edges": sum(1 for _, w in cp.g.edges.values() if w < 0),
            "top": [{"name": n, "bound": b, "us": us, "edges": k} for (n, b), (us, k) in (ranked[:top] if top > 0 else ranked)]}


if __name__ == "__main__":
    import sys
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    print(json.dumps(critical_path(args[0], args[1] if len(args) > 1 else "all", complete="--complete" in sys.argv,
                                   launch_edges="--launch-edges" in sys.argv), indent=1))
