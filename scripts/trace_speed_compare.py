#!/usr/bin/env python3
"""Wall time and peak RSS of `kernelab trace analyze` for two builds on the same traces.

Runs alternate (old, new, old, new, ...) so machine load hits both alike; wall time from
perf_counter around the process, peak RSS from wait4; the median of each. Also each binary's
baseline RSS (`kernelab specs`, no trace read), so the memory the analysis itself adds shows.

  scripts/trace_speed_compare.py OLD_KERNELAB NEW_KERNELAB [--runs 7] [--args "--json"] TRACE...
"""
import argparse
import os
import shlex
import statistics
import subprocess
import time


def measure(cmd):
    start = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed")
    return wall, usage.ru_maxrss / 1024  # MiB


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--args", default="", help="extra arguments for trace analyze")
    a = ap.parse_args()
    extra = shlex.split(a.args)
    base = {b: statistics.median(measure([b, "specs"])[1] for _ in range(a.runs)) for b in (a.old, a.new)}
    print(f"baseline RSS (kernelab specs): old {base[a.old]:.1f} MiB, new {base[a.new]:.1f} MiB")
    print(f"{'trace':<38} {'old s':>7} {'new s':>7} {'new/old':>7} {'old MiB':>8} {'new MiB':>8} {'new/old':>7}"
          f" {'old-base':>8} {'new-base':>8} {'new/old':>7}")
    for t in a.traces:
        runs = {a.old: [], a.new: []}
        for _ in range(a.runs):
            for b in (a.old, a.new):
                runs[b].append(measure([b, "trace", "analyze", *extra, t]))
        (ow, om), (nw, nm) = ([statistics.median(x) for x in zip(*runs[b])] for b in (a.old, a.new))
        oa, na = om - base[a.old], nm - base[a.new]
        print(f"{os.path.basename(t):<38} {ow:7.3f} {nw:7.3f} {nw / ow:7.2f} {om:8.1f} {nm:8.1f} {nm / om:7.2f}"
              f" {oa:8.1f} {na:8.1f} {na / oa if oa > 0 else float('nan'):7.2f}")


if __name__ == "__main__":
    main()
