#!/usr/bin/env python3
"""An independent computation of `kernelab trace analyze --json`'s figures (Python stdlib only).

It reads the raw Chrome-trace JSON with the json module (times as exact decimals), applies the
definitions stated in src/trace/analysis.h (HTA's for the temporal breakdown, idle breakdown,
launch statistics and overlap; HTA's regular expressions for kernel types, run with Python's re
as HTA runs them), and either prints its figures or compares them with kernelab's.

  scripts/trace_reference.py TRACE_OR_DIR...                   print the reference figures
  scripts/trace_reference.py --kernelab build/kernelab DIR...   compare; exit 1 on a mismatch
  ... --critical-path SPEC [--cp-launch-edges]                   only the critical path (trace_reference_cpath.py)

Exit 77 with --skip-missing when none of the given paths exists (ctest: skipped).
"""
import argparse
import decimal
import gzip
import json
import math
import os
import re
import subprocess
import sys
from collections import defaultdict

import trace_reference_cpath

GPU_CATS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
HOST_CATS = {"cuda_runtime", "cuda_driver", "cpu_op", "user_annotation"}
# PyTorch 1.8-1.9's spellings of the same Kineto activity types.
OLD_CATS = {"Kernel": "kernel", "Memcpy": "gpu_memcpy", "Memset": "gpu_memset", "Runtime": "cuda_runtime",
            "Driver": "cuda_driver", "Operator": "cpu_op"}
LAUNCH_NAMES = {"cudaLaunchKernel", "cudaLaunchKernelExC", "cudaMemcpyAsync", "cudaMemsetAsync", "cuLaunchKernel",
                "cuLaunchKernelEx", "hipLaunchKernel", "hipExtLaunchKernel", "hipModuleLaunchKernel",
                "hipExtModuleLaunchKernel", "hipMemcpyAsync", "hipMemsetAsync"}
SLOW_CALL_NS = 1_000_000  # src/trace/analysis.h kSlowCallNs
SYNC_NAMES = {"cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "hipDeviceSynchronize",
              "hipStreamSynchronize", "hipEventSynchronize"}
# hta/utils/utils.py
NCCL_KERNEL_RE = re.compile(r"^nccl.*Kernel")
MEMORY_KERNEL_RE = re.compile(r"(^Memcpy)|(^Memset)|(^dma)")
NCCL_COMPUTE_KERNEL_RE = re.compile(r"(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)")


def kernel_type(name):
    if NCCL_KERNEL_RE.match(name):
        return "communication"
    if MEMORY_KERNEL_RE.match(name):
        return "memory"
    if not NCCL_COMPUTE_KERNEL_RE.match(name):
        return "computation"
    return "other"


def to_ns(us):
    """Trace microseconds (int or Decimal) to integer ns, half away from zero past the ns."""
    return int((decimal.Decimal(us) * 1000).quantize(decimal.Decimal(1), rounding=decimal.ROUND_HALF_UP))


def as_int(v, fallback):
    """Python int() as HTA applies it (numbers truncate, digit strings parse)."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, (int, decimal.Decimal)):
        return int(v)
    if isinstance(v, str):
        try:
            return int(v)
        except ValueError:
            return fallback
    return fallback


def read_doc(path):
    """The trace file's JSON (gzip or plain), numbers with a fraction kept exact as Decimals."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw, parse_float=decimal.Decimal)


def load(path):
    doc = read_doc(path)
    events = doc if isinstance(doc, list) else doc["traceEvents"]
    gpu, host, stream_events = [], [], []
    # Kineto's launch flows ("ac2g"; "async" in 1.8-1.9): (pid, tid, ts) of each end -> the correlation id.
    flows = {}
    for e in events:
        if e.get("ph") in ("s", "f") and e.get("cat") in ("ac2g", "async") and "id" in e and "ts" in e:
            flow_id = as_int(e["id"], -1)
            if flow_id >= 0:
                flows.setdefault((str(e.get("pid")), str(e.get("tid")), to_ns(e["ts"])), flow_id)
    for e in events:
        if e.get("ph") != "X" or not isinstance(e.get("cat"), str):
            continue
        cat = OLD_CATS.get(e["cat"], e["cat"])
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        stream = as_int(args["stream"], -1) if "stream" in args else -1
        if cat not in GPU_CATS and cat not in HOST_CATS and (stream == -1 or cat == "Trace"):
            continue
        ev = {"ts": to_ns(e["ts"]), "dur": to_ns(e["dur"]), "name": e.get("name") if isinstance(e.get("name"), str) else ""}
        ev["end"] = ev["ts"] + ev["dur"]
        ev["corr"] = as_int(args["correlation"], -1) if "correlation" in args else -1
        if ev["corr"] == -1 and cat not in ("cpu_op", "user_annotation"):  # a launch flow ending on this event
            ev["corr"] = flows.get((str(e.get("pid")), str(e.get("tid")), ev["ts"]), -1)
        if cat in GPU_CATS or cat not in HOST_CATS:
            ev["device"] = as_int(args["device"], -1) if "device" in args else as_int(e.get("pid"), -1)
            ev["stream"] = stream
        if cat in GPU_CATS:
            ev["kind"] = GPU_CATS[cat]
            ev["bytes"] = max(0, as_int(args.get("bytes", 0), 0)) if cat != "kernel" else 0
            gpu.append(ev)
        elif cat in HOST_CATS:
            ev["cat"] = cat
            host.append(ev)
        else:
            stream_events.append(ev)
    return gpu, host, stream_events


def merge(intervals):
    out = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def length(merged):
    return sum(e - s for s, e in merged)


def intersection(a, b):
    """Length of the intersection of two merged interval lists (two-pointer walk)."""
    i = j = total = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0, hi - lo)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def quantile(sorted_values, q):
    pos = q * (len(sorted_values) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def us(ns):
    return ns / 1000.0


def complete_steps(gpu, host, stream_events):
    """HTA's default window (hta/common/trace.py, include_last_profiler_step=False): with two or more
    ProfilerStep#N, the host events that start before the last step starts and the GPU ops and
    stream events whose correlation one of those carries."""
    starts = defaultdict(list)
    for h in host:
        m = re.fullmatch(r"ProfilerStep#(\d+)", h["name"])
        if m:
            starts[int(m.group(1))].append(h["ts"])
    if len(starts) < 2:
        return gpu, host, stream_events
    last_start = max(min(ts) for ts in starts.values())
    host = [h for h in host if h["ts"] < last_start]
    launched = {h["corr"] for h in host if h["corr"] >= 0}
    keep = lambda evs: [e for e in evs if e["corr"] >= 0 and e["corr"] in launched]
    return keep(gpu), host, keep(stream_events)


def memory_reference(path, gpu, host):
    """Per device, the peak of the allocator's Total Allocated, or of the running sum of Bytes where
    an event lacks it, with when (from the first event) and the allocation and free counts."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    doc = json.loads(raw, parse_float=decimal.Decimal)
    events = doc if isinstance(doc, list) else doc["traceEvents"]
    mem = [e for e in events if e.get("ph") in ("i", "I") and e.get("name") == "[memory]"]
    starts = [to_ns(e["ts"]) for e in mem] + [o["ts"] for o in gpu] + [h["ts"] for h in host]
    by_dev = defaultdict(list)
    for e in sorted(mem, key=lambda e: to_ns(e["ts"])):
        a = e.get("args", {})
        by_dev[(as_int(a.get("Device Type", -1), -1), as_int(a.get("Device Id", -1), -1))].append((to_ns(e["ts"]), a))
    out = {}
    for (kind, dev), evs in by_dev.items():
        name = f"cuda:{dev}" if kind == 1 else "cpu" if kind == 0 else f"device type {kind} id {dev}"
        totals = all(as_int(a.get("Total Allocated", -1), -1) >= 0 for _, a in evs)
        running, peak, peak_ts = 0, None, None
        for ts, a in evs:
            running += as_int(a.get("Bytes", 0), 0)
            level = as_int(a["Total Allocated"], -1) if totals else running
            if peak is None or level > peak:
                peak, peak_ts = level, ts
        allocs = sum(1 for _, a in evs if as_int(a.get("Bytes", 0), 0) >= 0)
        out[name] = {"peak_allocated_bytes": peak, "peak_at_us": us(peak_ts - min(starts)), "allocations": allocs,
                     "frees": len(evs) - allocs}
    return out


def reference(path, kernel_wait_us=30.0, gap_us=100.0, chunks=10, steps="all"):
    gpu, host, stream_events = load(path)
    memory = memory_reference(path, gpu, host)
    if steps == "complete":
        gpu, host, stream_events = complete_steps(gpu, host, stream_events)
    out = {"devices": {}, "temporal_breakdown": {}, "overlap": {}}
    by_dev = defaultdict(list)
    for op in gpu:
        by_dev[op["device"]].append(op)
    kernel_time = 0
    gaps_total, longest = {}, []
    util = {}
    for dev, ops in sorted(by_dev.items()):
        merged = merge([(o["ts"], o["end"]) for o in ops])
        first, last = min(o["ts"] for o in ops), max(o["end"] for o in ops)
        d = {"span_us": us(last - first), "busy_us": us(length(merged)), "idle_us": us(last - first - length(merged))}
        kernels = [o for o in ops if o["kind"] == "kernel"]
        d["kernel_count"] = len(kernels)
        d["kernel_time_us"] = us(sum(o["dur"] for o in kernels))
        kernel_time += sum(o["dur"] for o in kernels)
        for kind in ("memcpy", "memset"):
            sel = [o for o in ops if o["kind"] == kind]
            d[kind] = {"count": len(sel), "time_us": us(sum(o["dur"] for o in sel)), "bytes": sum(o["bytes"] for o in sel)}
        out["devices"][str(dev)] = d
        gaps = [(merged[i][0] - merged[i - 1][1], merged[i - 1][1] - first) for i in range(1, len(merged))]
        gaps = [g for g in gaps if g[0] > round(gap_us * 1000)]
        gaps_total[str(dev)] = {"count": len(gaps), "total_us": us(sum(g[0] for g in gaps))}
        longest += [(g[0], dev, g[1]) for g in gaps]
        span = last - first
        if span > 0:
            u = []
            for k in range(chunks):
                a, b = first + span * k // chunks, first + span * (k + 1) // chunks
                cov = sum(max(0, min(b, e) - max(a, s)) for s, e in merged)
                u.append(cov / (b - a) if b > a else 0.0)
            util[str(dev)] = u
    out["kernel_count"] = sum(1 for o in gpu if o["kind"] == "kernel")
    out["kernel_time_us"] = us(kernel_time)
    longest.sort(key=lambda g: -g[0])
    out["gaps"] = {"devices": gaps_total, "longest": [{"device": d, "start_us": us(s), "dur_us": us(g)} for g, d, s in longest[:10]],
                   "utilization_chunks": util}

    names = defaultdict(list)
    for o in gpu:
        if o["kind"] == "kernel":
            names[o["name"]].append(o["dur"])
    kernels = []
    for name, durs in names.items():
        durs.sort()
        kernels.append({"name": name, "type": kernel_type(name), "count": len(durs), "total_us": us(sum(durs)),
                        "mean_us": us(sum(durs) / len(durs)), "median_us": us(quantile(durs, 0.5)),
                        "p90_us": us(quantile(durs, 0.9)), "min_us": us(durs[0]), "max_us": us(durs[-1])})
    out["top_kernels"] = sorted(kernels, key=lambda k: (-k["total_us"], k["name"]))

    # Temporal breakdown and overlap: every event on a stream, typed by name (HTA).
    on_stream = defaultdict(lambda: defaultdict(list))
    for ev in [o for o in gpu if o["stream"] != -1] + stream_events:
        on_stream[ev["device"]][kernel_type(ev["name"])].append((ev["ts"], ev["end"]))
    for dev, typed in sorted(on_stream.items()):
        every = merge([iv for v in typed.values() for iv in v])
        span = max(e for _, e in every) - every[0][0]
        idle = span - length(every)
        comp, comm = merge(typed["computation"]), merge(typed["communication"])
        compute = length(comp)
        comm_only = length(comm) - intersection(comm, comp)
        memory_only = length(merge(typed["memory"] + typed["computation"] + typed["communication"])) - \
            length(merge(typed["computation"] + typed["communication"]))
        non_compute = span - compute - idle
        out["temporal_breakdown"][str(dev)] = {
            "span_us": us(span), "idle_us": us(idle), "compute_us": us(compute), "non_compute_us": us(non_compute),
            "communication_us": us(comm_only), "memory_us": us(memory_only), "other_us": us(non_compute - comm_only - memory_only)}
        ratio = intersection(comm, comp) / length(comm) if comm else None
        out["overlap"][str(dev)] = {"communication_us": us(length(comm)), "overlapped_us": us(intersection(comm, comp)), "ratio": ratio}

    # Idle breakdown per stream (HTA).
    call_start = {}
    for h in host:
        if h["cat"] in ("cuda_runtime", "cuda_driver") and h["corr"] != -1:
            call_start[h["corr"]] = h["ts"]
    threshold = round(kernel_wait_us * 1000)
    streams = defaultdict(list)
    for o in gpu:
        if o["stream"] != -1:
            streams[(o["device"], o["stream"])].append(o)
    idle_rows = []
    for (dev, stream), ops in sorted(streams.items()):
        ops.sort(key=lambda o: o["ts"])
        row = {"device": dev, "stream": stream, "host_wait_us": 0, "kernel_wait_us": 0, "other_us": 0}
        for prev, op in zip(ops, ops[1:]):
            gap = op["ts"] - prev["end"]
            start = call_start.get(op["corr"]) if op["corr"] >= 0 else None
            cat = "host_wait_us" if start is not None and start > prev["end"] else "kernel_wait_us" if gap < threshold else "other_us"
            row[cat] += gap
            if cat == "host_wait_us":
                op["host_wait_before"] = gap
        idle_rows.append({k: (us(v) if k.endswith("_us") else v) for k, v in row.items()})
    out["idle_breakdown"] = {"kernel_wait_threshold_us": kernel_wait_us, "streams": idle_rows}

    # Launch statistics (HTA) and synchronisation.
    launch = {}
    for h in host:
        if h["cat"] in ("cuda_runtime", "cuda_driver") and h["corr"] != -1 and h["name"] in LAUNCH_NAMES:
            launch[h["corr"]] = h
    delays, short, short_ops, kernels_paired = [], 0, 0, 0
    slow_launch, slow_launch_gpu, slow_launch_cpu, waited, waited_gap = 0, 0, 0, 0, 0
    for o in gpu:
        c = launch.get(o["corr"]) if o["corr"] != -1 and o["stream"] != -1 else None
        if c is None:
            continue
        delays.append(max(0, o["ts"] - c["end"]))
        short_ops += o["dur"] < c["dur"]
        if o["kind"] == "kernel":
            kernels_paired += 1
            short += o["dur"] < c["dur"]
            if o["dur"] < c["dur"] and c["dur"] > SLOW_CALL_NS:
                slow_launch += 1
                slow_launch_gpu += o["dur"]
                slow_launch_cpu += c["dur"]
            if o["dur"] < c["dur"] and c["dur"] <= SLOW_CALL_NS and "host_wait_before" in o:
                waited += 1
                waited_gap += o["host_wait_before"]
    delays.sort()
    out["median_launch_delay_us"] = us(quantile(delays, 0.5)) if delays else None
    out["launch"] = {"pairs": len(delays), "p90_delay_us": us(quantile(delays, 0.9)) if delays else None,
                     "kernels": kernels_paired, "short_kernels": short, "short_ops": short_ops,
                     "short_kernels_slow_launch": slow_launch, "short_slow_launch_gpu_us": us(slow_launch_gpu),
                     "short_slow_launch_us": us(slow_launch_cpu), "short_kernels_waited": waited, "short_waited_gap_us": us(waited_gap)}
    sync = defaultdict(lambda: {"calls": 0, "blocked_us": 0.0})
    for h in host:
        if h["cat"] == "cuda_runtime" and h["name"] in SYNC_NAMES:
            sync[h["name"]]["calls"] += 1
            sync[h["name"]]["blocked_us"] += us(h["dur"])
    out["sync"] = {"calls": dict(sync)}
    out["memory"] = memory

    # CUDA API calls over SLOW_CALL_NS with under a tenth of their time covered by any GPU op (none
    # in a trace without GPU ops: no idle GPU to speak of).
    any_gpu = merge([(o["ts"], o["end"]) for o in gpu])
    calls = sorted((h for h in host if h["cat"] in ("cuda_runtime", "cuda_driver") and any_gpu), key=lambda h: h["ts"])
    slow = [h for h in calls if h["dur"] > SLOW_CALL_NS and intersection(any_gpu, [[h["ts"], h["end"]]]) < h["dur"] // 10]
    slow_merged = merge([(h["ts"], h["end"]) for h in slow])
    idle_covered = {}
    if slow:
        for dev, ops in sorted(by_dev.items()):
            busy = merge([(o["ts"], o["end"]) for o in ops])
            idle_covered[str(dev)] = us(intersection(slow_merged, [[busy[0][0], busy[-1][1]]]) - intersection(slow_merged, busy))
    first_gpu = any_gpu[0][0] if any_gpu else 0
    out["slow_api_calls"] = {
        "calls": len(slow), "total_us": us(sum(h["dur"] for h in slow)), "idle_covered_us": idle_covered,
        "longest": [{"name": h["name"], "dur_us": us(h["dur"]), "from_first_gpu_op_us": us(h["ts"] - first_gpu)}
                    for h in sorted(slow, key=lambda h: -h["dur"])[:3]]}
    return out


def compare(ref, got, path, mismatches):
    """Every number in ref must equal the one at the same place in got (lists by position)."""
    if isinstance(ref, dict):
        if not isinstance(got, dict):
            mismatches.append(f"{path}: expected an object, kernelab has {got!r}")
            return
        for k, v in ref.items():
            if k not in got:
                mismatches.append(f"{path}.{k}: missing in kernelab's output")
            else:
                compare(v, got[k], f"{path}.{k}", mismatches)
    elif isinstance(ref, list):
        if not isinstance(got, list) or len(got) != len(ref):
            mismatches.append(f"{path}: {len(ref)} entries in the reference, kernelab has {len(got) if isinstance(got, list) else got!r}")
            return
        for i, (r, g) in enumerate(zip(ref, got)):
            compare(r, g, f"{path}[{i}]", mismatches)
    elif isinstance(ref, (int, float)) and not isinstance(ref, bool):
        if not isinstance(got, (int, float)) or not math.isclose(ref, got, rel_tol=1e-9, abs_tol=1e-6):
            mismatches.append(f"{path}: reference {ref!r}, kernelab {got!r}")
    elif ref != got:
        mismatches.append(f"{path}: reference {ref!r}, kernelab {got!r}")


def trace_files(paths):
    for p in paths:
        if os.path.isdir(p):
            for f in sorted(os.listdir(p)):
                if f.endswith(".json") or f.endswith(".json.gz"):
                    yield os.path.join(p, f)
        elif os.path.exists(p):
            yield p


def compare_critical_paths(files, args):
    """`trace analyze --critical-path` against trace_reference_cpath on each file; a trace without the
    iteration must be refused by both (exit 2)."""
    failed = 0
    for f in files:
        ref = trace_reference_cpath.critical_path(f, args.critical_path, complete=args.steps == "complete",
                                                  launch_edges=args.cp_launch_edges, top=0)
        if not args.kernelab:
            print(json.dumps({"file": f, "critical_path": ref}, indent=2))
            continue
        cmd = [args.kernelab, "trace", "analyze", "--json", "--top", "0", "--steps", args.steps, "--critical-path", args.critical_path, f]
        if args.cp_launch_edges:
            cmd.append("--cp-launch-edges")
        run = subprocess.run(cmd, capture_output=True, text=True)
        if ref is None:
            ok = run.returncode == 2 and "no such event" in run.stderr
            print(f"{'ok  ' if ok else 'FAIL'} {f}: no {args.critical_path} (kernelab exit {run.returncode})")
            failed += not ok
            continue
        if run.returncode != 0:
            print(f"FAIL {f}: kernelab exited {run.returncode}: {run.stderr.strip()}")
            failed += 1
            continue
        mismatches = []
        compare(ref, json.loads(run.stdout).get("critical_path"), "critical_path", mismatches)
        if mismatches:
            failed += 1
            print(f"FAIL {f}: {len(mismatches)} mismatches")
            for m in mismatches[:20]:
                print("   ", m)
        else:
            print(f"ok   {f}: critical path {ref['length_us']} us over {ref['path_nodes']} nodes of {ref['nodes']} agrees")
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="+", help="trace files or folders of them")
    ap.add_argument("--kernelab", help="compare with this kernelab binary's `trace analyze --json`")
    ap.add_argument("--skip-missing", action="store_true", help="exit 77 when no path exists")
    ap.add_argument("--steps", choices=["all", "complete"], default="all", help="the event window (trace analyze --steps)")
    ap.add_argument("--critical-path", help="compare only the critical path of this iteration (trace analyze --critical-path)")
    ap.add_argument("--cp-launch-edges", action="store_true", help="with --critical-path: zero-weight launch edges")
    args = ap.parse_args()
    if args.skip_missing and not any(os.path.exists(p) for p in args.paths):
        print("no trace folder found: skipped")
        return 77
    files = list(trace_files(args.paths))
    if not files:
        print("no trace files found", file=sys.stderr)
        return 2 if not args.skip_missing else 77
    if args.critical_path:
        return compare_critical_paths(files, args)
    failed = 0
    for f in files:
        ref = reference(f, steps=args.steps)
        if not args.kernelab:
            print(json.dumps({"file": f, **ref}, indent=2))
            continue
        run = subprocess.run([args.kernelab, "trace", "analyze", "--json", "--top", "0", "--steps", args.steps, f], capture_output=True, text=True)
        if run.returncode != 0:
            print(f"FAIL {f}: kernelab exited {run.returncode}: {run.stderr.strip()}")
            failed += 1
            continue
        mismatches = []
        compare(ref, json.loads(run.stdout), "", mismatches)
        n_kernels = len(ref["top_kernels"])
        if mismatches:
            failed += 1
            print(f"FAIL {f}: {len(mismatches)} mismatches")
            for m in mismatches[:20]:
                print("   ", m)
        else:
            print(f"ok   {f}: {ref['kernel_count']} kernels ({n_kernels} names), {len(ref['idle_breakdown']['streams'])} streams agree")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
