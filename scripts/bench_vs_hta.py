#!/usr/bin/env python3
"""kernelab trace analyze against Holistic Trace Analysis (HTA) on the same traces.

Each side runs in its own process per trace (three times; the median wall and CPU time and the
largest peak RSS are kept, all from os.wait4; CPU time is the steadier figure on a shared
machine). HTA computes its temporal breakdown, idle time breakdown, GPU kernel breakdown,
comm/comp overlap and CUDA kernel launch statistics; kernelab runs `trace analyze --json --top 0`,
which computes all of those and more. The shared figures are compared number by number.

HTA is run the way that analyses the same events as kernelab: HTA_DISABLE_NS_ROUNDING=1 (its own
switch; by default it rounds ns-resolution timestamps to whole us) and loaded without its
last-ProfilerStep filter (by default it drops the kernels of the last profiler step).

Where figures differ, HTA runs once more on a corrected copy of the trace that removes its two
input quirks: timestamps are rebased to the trace's first whole microsecond (HTA reads them as
float64, which at 1.7e15 us since the epoch resolves 0.25 us and loses ns-resolution digits),
and host events (cpu_op, user_annotation, cuda_runtime, cuda_driver) lose args.stream (HTA takes
every event with a stream for a GPU op, so Inductor's cpu_op records of Triton launches count as
GPU kernels). A difference left after that fails the run.

--big also writes the largest trace with every event padded to the big trace's size: the same
file size with 1/N of the events shows what kernelab's memory follows.

  python3 -m venv /tmp/hta && /tmp/hta/bin/pip install holistictraceanalysis
  scripts/bench_vs_hta.py --hta-python /tmp/hta/bin/python --kernelab build/kernelab \\
      ../shared/data/traces/*.json.gz \\
      tests/data/hta_traces/{sampled_training_rank0,triton_example,event_sync,amd_mi250_rocm6}.json.gz \\
      --scale 10 --big 120
"""
import argparse
import decimal
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
    ta.t = Trace(trace_files={0: os.path.abspath(path)}, trace_dir="/")
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
# A child's ru_maxrss includes the peak RSS of the process it was forked from (Linux keeps the
# old mm's high-water mark across exec), so a child forked from this script would report at
# least this script's own peak. A bare interpreter forks the measured process instead and
# reports its wall time and peak RSS, both from its own os.wait4.
LAUNCHER = """import os, sys, time
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(f"{os.waitstatus_to_exitcode(status)} {time.perf_counter() - t0} {usage.ru_utime + usage.ru_stime} {usage.ru_maxrss}")
"""


def measure(cmd, tmp, stdout=None):
    """Wall seconds, CPU seconds (user + system) and peak RSS (MiB) of one process."""
    out = os.path.join(tmp, "measure.txt")
    subprocess.run([sys.executable, "-S", "-I", "-c", LAUNCHER, out, *cmd], check=True,
                   stdout=stdout or subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(out) as f:
        code, wall, cpu, kib = f.read().split()
    if int(code) != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {code}")
    return float(wall), float(cpu), int(kib) / 1024.0


def summarize(runs):
    """Median wall and CPU seconds, largest peak RSS."""
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs), max(r[2] for r in runs)


def run_hta(python, path, repeats, tmp):
    out = os.path.join(tmp, "hta.json")
    runs = [measure([python, HERE, "--hta-worker", path, out], tmp) for _ in range(repeats)]
    with open(out) as f:
        figures = json.load(f)
    return summarize(runs), figures


def run_kernelab(binary, path, repeats, tmp):
    out = os.path.join(tmp, "kernelab.json")
    runs = []
    for _ in range(repeats):
        with open(out, "w") as f:
            runs.append(measure([binary, "trace", "analyze", "--json", "--top", "0", path], tmp, stdout=f))
    with open(out) as f:
        report = json.load(f)
    return summarize(runs), report


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
    memory = {"Memcpy": 0.0, "Memset": 0.0}  # HTA lists memcpy/memset by name; kernelab sums them per device
    not_kernels = set()
    for r in hta["kernels"]:
        x = mine.get(r["name"])
        if r["type"] == "MEMORY" and r["name"][:6] in memory:
            memory[r["name"][:6]] += r["sum"]
            continue
        if x is None:  # a cuda_sync event typed as a kernel by its name ("Stream Wait Event")
            not_kernels.add(r["name"])
            continue
        for h_key, k_key in (("sum", "total_us"), ("mean", "mean_us"), ("max", "max_us"), ("min", "min_us")):
            check(f"kernel {r['name'][:40]} {h_key}", r[h_key], x[k_key])
        checked += 1
        if r["type"].lower() != x["type"]:
            bad.append(f"kernel {r['name'][:40]} type: HTA {r['type']}, kernelab {x['type']}")
    for kind, key in (("Memcpy", "memcpy"), ("Memset", "memset")):
        check(f"{kind} time", memory[kind], sum(d[key]["time_us"] for d in k["devices"].values()))
    ratio = next(iter(k["overlap"].values()))["ratio"] if k["overlap"] else None
    check("comm/comp overlap %", hta["overlap_pct"], None if ratio is None else round(100 * ratio, 2), abs_tol=0.0051)
    check("launch pairs", hta["launch"]["pairs"], k["launch"]["pairs"])
    check("median launch delay", hta["launch"]["median_delay"], k["median_launch_delay_us"])
    check("GPU ops shorter than their launch call", hta["launch"]["short"], k["launch"]["short_ops"])
    return checked, bad, sorted(not_kernels)


# ---- traces made from a real one --------------------------------------------------------------- ----------------------------------------------------------
def read_trace(path, **json_options):
    with gzip.open(path) if path.endswith(".gz") else open(path, "rb") as f:
        doc = json.load(f, **json_options)
    return doc if isinstance(doc, dict) else {"traceEvents": doc}


def write_trace(out, doc, events):
    """doc's top-level members with `events` as traceEvents, to out (.json.gz, level 1)."""
    with gzip.open(out + ".part", "wt", compresslevel=1) as f:
        f.write("{")
        for key, value in doc.items():
            if key != "traceEvents":
                f.write(f"{json.dumps(key)}: {json.dumps(value)},\n")
        f.write('"traceEvents": [\n')
        for i, e in enumerate(events):
            f.write(("" if i == 0 else ",\n") + json.dumps(e))
        f.write("\n]}\n")
    os.replace(out + ".part", out)
    return out


def scaled_trace(src, copies, tmp):
    """src's events repeated `copies` times, each copy shifted past the previous one in time and
    in correlation ids: a longer run of the same program."""
    out = os.path.join(tmp, f"{os.path.basename(src).split('.')[0]}_x{copies}.json.gz")
    if os.path.exists(out):
        return out
    doc = read_trace(src)
    events = doc["traceEvents"]
    ts = [e["ts"] for e in events if isinstance(e.get("ts"), (int, float))]
    period = max(ts) - min(ts) + 1000
    corr_step = 1 + max((e.get("args") or {}).get("correlation", 0) for e in events if isinstance(e.get("args"), dict))

    def copied():
        for c in range(copies):
            for e in events:
                if "ts" not in e:
                    if not c:
                        yield e
                    continue
                e = dict(e, ts=round(e["ts"] + c * period, 3))
                if isinstance(e.get("args"), dict) and "correlation" in e["args"]:
                    e["args"] = dict(e["args"], correlation=e["args"]["correlation"] + c * corr_step)
                yield e
    return write_trace(out, {"schemaVersion": 1}, copied())


def padded_trace(src, json_bytes, tmp):
    """src with a padding string in every event's args, to about json_bytes of JSON: the same
    events kept, a file as large as a trace with many more."""
    out = os.path.join(tmp, f"{os.path.basename(src).split('.')[0]}_padded.json.gz")
    doc = read_trace(src)
    events = doc["traceEvents"]
    pad = max(0, int((json_bytes - json_mib(src) * 2**20) / len(events)) - 16)
    for e in events:
        e["args"] = dict(e.get("args") or {}, pad="x" * pad)
    return write_trace(out, doc, events)


HOST_CATS = {"cpu_op", "user_annotation", "cuda_runtime", "cuda_driver"}


def corrected_trace(src, tmp):
    """src without HTA's two input quirks (see the top of this file): timestamps rebased to the
    first whole microsecond, exactly (decimal), so float64 holds every digit; args.stream dropped
    from host events. Returns the copy and what was changed."""
    out = os.path.join(tmp, "corrected.json.gz")
    doc = read_trace(src, parse_float=decimal.Decimal)
    events = doc["traceEvents"]
    base = min(int(e["ts"]) for e in events if isinstance(e.get("ts"), (int, decimal.Decimal)))
    host_streams = 0
    for e in events:
        if isinstance(e.get("ts"), (int, decimal.Decimal)):
            e["ts"] = e["ts"] - base
        if e.get("cat") in HOST_CATS and isinstance(e.get("args"), dict) and "stream" in e["args"]:
            del e["args"]["stream"]
            host_streams += 1

    def as_float(x):  # Decimal -> float only after the rebase: small values keep all their digits
        if isinstance(x, dict):
            return {k: as_float(v) for k, v in x.items()}
        if isinstance(x, list):
            return [as_float(v) for v in x]
        return float(x) if isinstance(x, decimal.Decimal) else x
    meta = {k: as_float(v) for k, v in doc.items() if k != "traceEvents"}
    write_trace(out, meta, (as_float(e) for e in events))
    return out, f"ts rebased by {base} us, args.stream dropped from {host_streams} host events"


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
    ap.add_argument("--big", type=int, default=0, help="also kernelab alone on the largest trace repeated N times, and padded to that size")
    ap.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "kernelab_bench_vs_hta"))
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    traces = list(args.traces)
    largest = max(traces, key=os.path.getsize)
    if args.scale:
        traces.append(scaled_trace(largest, args.scale, args.workdir))

    header = f"{'trace':34} {'JSON MiB':>8} {'HTA s':>6} {'cpu s':>6} {'(load+an.)':>10} {'HTA MiB':>7} {'kernelab s':>10} {'cpu s':>6} " \
             f"{'MiB':>4} {'time x':>6} {'cpu x':>5} {'(vs l+a)':>8} {'mem x':>5}  figures"
    print(header)
    print("-" * len(header))
    failed = False
    for path in traces:
        (h_wall, h_cpu, h_mib), hta = run_hta(args.hta_python, path, args.repeats, args.workdir)
        (k_wall, k_cpu, k_mib), rep = run_kernelab(args.kernelab, path, args.repeats, args.workdir)
        checked, bad, not_kernels = compare(hta, rep)
        in_proc = hta["seconds"]["load"] + hta["seconds"]["analyses"]
        verdict = f"{checked} agree" if not bad else f"{len(bad)} of {checked} differ"
        print(f"{os.path.basename(path)[:34]:34} {json_mib(path):8.1f} {h_wall:6.2f} {h_cpu:6.2f} {in_proc:10.2f} {h_mib:7.0f} {k_wall:10.3f} "
              f"{k_cpu:6.3f} {k_mib:4.0f} {h_wall / k_wall:6.0f} {h_cpu / k_cpu:5.0f} {in_proc / k_wall:8.0f} {h_mib / k_mib:5.1f}  {verdict}")
        for b in bad[:10]:
            print("     HTA as is:", b)
        if bad:
            copy, changes = corrected_trace(path, args.workdir)
            _, fixed = run_hta(args.hta_python, copy, 1, args.workdir)
            checked, still_bad, _ = compare(fixed, rep)
            failed |= bool(still_bad)
            print(f"     HTA on a corrected copy ({changes}): " +
                  (f"all {checked} agree" if not still_bad else f"{len(still_bad)} of {checked} DIFFER"))
            for b in still_bad[:10]:
                print("      ", b)
        if not_kernels:
            print(f"     (not compared: {', '.join(not_kernels)}, cuda_sync events that HTA types as kernels by name)")
    if args.big:
        big = scaled_trace(largest, args.big, args.workdir)
        padded = padded_trace(largest, json_mib(big) * 2**20, args.workdir)
        print()
        for path in (big, padded):
            (k_wall, k_cpu, k_mib), rep = run_kernelab(args.kernelab, path, 1, args.workdir)
            print(f"kernelab alone on {os.path.basename(path)}: {json_mib(path):.0f} MiB of JSON ({os.path.getsize(path) / 2**20:.0f} MiB gzip), "
                  f"{rep['events']} events, {rep['kernel_count']} kernels: {k_wall:.2f} s ({k_cpu:.2f} s CPU), peak RSS {k_mib:.0f} MiB")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
