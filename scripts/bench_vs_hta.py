#!/usr/bin/env python3
"""kernelab trace analyze against Holistic Trace Analysis (HTA) on the same traces.

Each side runs in its own process per trace (three times; the median time and the largest peak
RSS are kept, both from os.wait4). HTA computes its temporal breakdown, idle time breakdown,
GPU kernel breakdown, comm/comp overlap and CUDA kernel launch statistics; kernelab runs
`trace analyze --json --top 0`, which computes all of those and more. The shared figures are
compared number by number.

HTA is run the way that analyses the same events as kernelab: HTA_DISABLE_NS_ROUNDING=1 (its own
switch; by default it rounds ns-resolution timestamps to whole us) and loaded without its
last-ProfilerStep filter (by default it drops the kernels of the last profiler step).

  python3 -m venv /tmp/hta && /tmp/hta/bin/pip install holistictraceanalysis
  scripts/bench_vs_hta.py --hta-python /tmp/hta/bin/python --kernelab build/kernelab \\
      ../shared/data/traces/*.json.gz --scale 10 --big 80
"""
import argparse
import gzip
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.abspath(__file__)


# ---- the HTA side, in its own process (run by the HTA venv's python) ------------------------
def hta_worker(path, out):
    os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
    t0 = time.perf_counter()
    from hta.common.trace import Trace
    from hta.trace_analysis import TraceAnalysis
    t_import = time.perf_counter()
    ta = TraceAnalysis.__new__(TraceAnalysis)  # TraceAnalysis.__init__ minus the last-step filter
    ta.t = Trace(trace_files={0: path}, trace_dir="/")
    ta.t.parse_traces(use_multiprocessing=False)
    ta.t._align_all_ranks()
    for rank, df in ta.t.traces.items():
        df = df.set_index("index", drop=False)
        df.index.names = [None]
        ta.t.traces[rank] = df
    ta.t.is_parsed = True
    t_load = time.perf_counter()
    temporal = ta.get_temporal_breakdown(visualize=False)
    idle, _ = ta.get_idle_time_breakdown(ranks=[0], visualize=False, consecutive_kernel_delay=30)
    _, kernels = ta.get_gpu_kernel_breakdown(visualize=False, duration_ratio=1.0, num_kernels=10**9, include_memory_kernels=True)
    overlap = ta.get_comm_comp_overlap(visualize=False)
    launch = ta.get_cuda_kernel_launch_stats(ranks=[0], visualize=False)[0]
    t_end = time.perf_counter()
    row = temporal.iloc[0]
    figures = {
        "temporal": {k: float(row[k]) for k in ("idle_time(us)", "compute_time(us)", "non_compute_time(us)", "kernel_time(us)")},
        "idle": [{"stream": int(r.stream), "category": r.idle_category, "us": float(r.idle_time)} for r in idle.itertuples()],
        "kernels": [{"name": r["name"], "type": r["kernel_type"], "sum": float(r["sum (us)"]), "mean": float(r["mean (us)"]),
                     "max": float(r["max (us)"]), "min": float(r["min (us)"])} for _, r in kernels.iterrows()],
        "overlap_pct": None if math.isnan(overlap.iloc[0]["comp_comm_overlap_pctg"]) else float(overlap.iloc[0]["comp_comm_overlap_pctg"]),
        "launch": {"pairs": len(launch), "median_delay": float(launch.launch_delay.median()) if len(launch) else None,
                   "short": int((launch.gpu_duration < launch.cpu_duration).sum())},
        "seconds": {"import": t_import - t0, "load": t_load - t_import, "analyses": t_end - t_load},
    }
    with open(out, "w") as f:
        json.dump(figures, f)


# ---- measuring a process ----------------------------------------------------------------------
def measure(cmd, env=None, stdout=None):
    """Wall seconds and peak RSS (MiB) of one process."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=stdout or subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {os.waitstatus_to_exitcode(status)}")
    return wall, usage.ru_maxrss / 1024.0


def run_hta(python, path, repeats, tmp):
    out = os.path.join(tmp, "hta.json")
    runs = [measure([python, HERE, "--hta-worker", path, out]) for _ in range(repeats)]
    with open(out) as f:
        figures = json.load(f)
    return statistics.median(r[0] for r in runs), max(r[1] for r in runs), figures


def run_kernelab(binary, path, repeats, tmp):
    out = os.path.join(tmp, "kernelab.json")
    runs = []
    for _ in range(repeats):
        with open(out, "w") as f:
            runs.append(measure([binary, "trace", "analyze", "--json", "--top", "0", path], stdout=f))
    with open(out) as f:
        report = json.load(f)
    return statistics.median(r[0] for r in runs), max(r[1] for r in runs), report


# ---- comparing the shared figures ---------------------------------------------------------------
def close(a, b, abs_tol=1e-3):
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=abs_tol)


def compare(hta, k):
    """(figures checked, mismatch descriptions, HTA kernel-breakdown rows that are not kernels)."""
    checked, bad = 0, []

    def check(what, h, mine, abs_tol=1e-3):
        nonlocal checked
        checked += 1
        if not close(h, mine, abs_tol):
            bad.append(f"{what}: HTA {h}, kernelab {mine}")

    devices = list(k["temporal_breakdown"].values())
    if len(devices) == 1:  # HTA merges a rank's devices; these traces have one
        t = devices[0]
        check("temporal idle", hta["temporal"]["idle_time(us)"], t["idle_us"])
        check("temporal compute", hta["temporal"]["compute_time(us)"], t["compute_us"])
        check("temporal non-compute", hta["temporal"]["non_compute_time(us)"], t["non_compute_us"])
        check("temporal span", hta["temporal"]["kernel_time(us)"], t["span_us"])
    streams = {s["stream"]: s for s in k["idle_breakdown"]["streams"]}
    for r in hta["idle"]:  # HTA rounds these to 0.01 us
        check(f"idle stream {r['stream']} {r['category']}", r["us"], streams[r["stream"]][r["category"] + "_us"], abs_tol=0.0051)
    mine = {x["name"]: x for x in k["top_kernels"]}
    not_kernels = 0
    for r in hta["kernels"]:
        x = mine.get(r["name"])
        if x is None:  # cuda_sync events and memcpy/memset: in HTA's breakdown, not kernels
            not_kernels += 1
            continue
        for h_key, k_key in (("sum", "total_us"), ("mean", "mean_us"), ("max", "max_us"), ("min", "min_us")):
            check(f"kernel {r['name'][:40]} {h_key}", r[h_key], x[k_key])
        checked += 1
        if r["type"].lower() != x["type"]:
            bad.append(f"kernel {r['name'][:40]} type: HTA {r['type']}, kernelab {x['type']}")
    ratio = next(iter(k["overlap"].values()))["ratio"] if k["overlap"] else None
    check("comm/comp overlap %", hta["overlap_pct"], None if ratio is None else round(100 * ratio, 2), abs_tol=0.0051)
    check("launch pairs", hta["launch"]["pairs"], k["launch"]["pairs"])
    check("median launch delay", hta["launch"]["median_delay"], k["median_launch_delay_us"])
    check("GPU ops shorter than their launch call", hta["launch"]["short"], k["launch"]["short_ops"])
    return checked, bad, not_kernels


# ---- bigger traces made from a real one ----------------------------------------------------------
def scaled_trace(src, copies, tmp):
    """src's events repeated `copies` times, each copy shifted past the previous one in time and
    in correlation ids: a longer run of the same program. Written as .json.gz (level 1)."""
    out = os.path.join(tmp, f"{os.path.basename(src).split('.')[0]}_x{copies}.json.gz")
    if os.path.exists(out):
        return out
    with gzip.open(src) as f:
        doc = json.load(f)
    events = doc["traceEvents"]
    ts = [e["ts"] for e in events if isinstance(e.get("ts"), (int, float))]
    period = max(ts) - min(ts) + 1000
    corr_step = 1 + max((e.get("args") or {}).get("correlation", 0) for e in events if isinstance(e.get("args"), dict))
    with gzip.open(out + ".part", "wt", compresslevel=1) as f:
        f.write('{"schemaVersion": 1, "traceEvents": [\n')
        first = True
        for c in range(copies):
            for e in events:
                if "ts" not in e:
                    if c:
                        continue
                else:
                    e = dict(e, ts=round(e["ts"] + c * period, 3))
                    if isinstance(e.get("args"), dict) and "correlation" in e["args"]:
                        e["args"] = dict(e["args"], correlation=e["args"]["correlation"] + c * corr_step)
                f.write(("" if first else ",\n") + json.dumps(e))
                first = False
        f.write("\n]}\n")
    os.replace(out + ".part", out)
    return out


def json_mib(path):
    with gzip.open(path) if path.endswith(".gz") else open(path, "rb") as f:
        n = 0
        while chunk := f.read(1 << 24):
            n += len(chunk)
    return n / 2**20


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--hta-worker":
        return hta_worker(sys.argv[2], sys.argv[3])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--hta-python", required=True, help="a python with holistictraceanalysis installed")
    ap.add_argument("--kernelab", default="build/kernelab")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--scale", type=int, default=0, help="also both tools on the largest trace repeated N times")
    ap.add_argument("--big", type=int, default=0, help="also kernelab alone on the largest trace repeated N times")
    ap.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "kernelab_bench_vs_hta"))
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    traces = list(args.traces)
    largest = max(traces, key=os.path.getsize)
    if args.scale:
        traces.append(scaled_trace(largest, args.scale, args.workdir))

    header = f"{'trace':34} {'JSON MiB':>8} {'HTA s':>7} {'(load+an.)':>10} {'HTA MiB':>8} {'kernelab s':>10} {'MiB':>6} " \
             f"{'time x':>7} {'(vs l+a)':>8} {'mem x':>6}  figures"
    print(header)
    print("-" * len(header))
    failed = False
    for path in traces:
        h_wall, h_mib, hta = run_hta(args.hta_python, path, args.repeats, args.workdir)
        k_wall, k_mib, rep = run_kernelab(args.kernelab, path, args.repeats, args.workdir)
        checked, bad, not_kernels = compare(hta, rep)
        failed |= bool(bad)
        in_proc = hta["seconds"]["load"] + hta["seconds"]["analyses"]
        verdict = f"{checked} agree" if not bad else f"{len(bad)} of {checked} DIFFER"
        print(f"{os.path.basename(path):34} {json_mib(path):8.1f} {h_wall:7.2f} {in_proc:10.2f} {h_mib:8.0f} {k_wall:10.3f} {k_mib:6.0f} "
              f"{h_wall / k_wall:7.0f} {in_proc / k_wall:8.0f} {h_mib / k_mib:6.1f}  {verdict}")
        for b in bad[:10]:
            print("    ", b)
        if not_kernels:
            print(f"    ({not_kernels} rows of HTA's kernel breakdown are memcpy/memset or cuda_sync events, not kernels: not compared)")
    if args.big:
        big = scaled_trace(largest, args.big, args.workdir)
        k_wall, k_mib, rep = run_kernelab(args.kernelab, big, 1, args.workdir)
        print(f"\nkernelab alone on {os.path.basename(big)}: {json_mib(big):.0f} MiB of JSON ({os.path.getsize(big) / 2**20:.0f} MiB gzip), "
              f"{rep['events']} events, {rep['kernel_count']} kernels: {k_wall:.2f} s, peak RSS {k_mib:.0f} MiB")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
