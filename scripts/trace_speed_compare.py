#!/usr/bin/env python3
"""Wall time and peak RSS of `kernelab trace analyze` for two builds on the same traces.

Runs alternate (old, new, old, new, ...) so machine load hits both alike; wall time from
perf_counter around the process, CPU time (user + system) and peak RSS from wait4; the median of
each. CPU time is the steadier figure on a shared machine. Also each binary's baseline (`kernelab
specs`, no trace read: start-up and the binary's own pages), so what the analysis adds shows.

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
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024  # s, s, MiB


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--args", default="", help="extra arguments for trace analyze")
    a = ap.parse_args()
    extra = shlex.split(a.args)
    base = {}
    for b in (a.old, a.new):
        runs = [measure([b, "specs"]) for _ in range(a.runs)]
        base[b] = [statistics.median(x) for x in zip(*runs)]
    print(f"baseline (kernelab specs): old {base[a.old][1] * 1e3:.0f} ms CPU, {base[a.old][2]:.1f} MiB; "
          f"new {base[a.new][1] * 1e3:.0f} ms CPU, {base[a.new][2]:.1f} MiB")
    print(f"{'trace':<36} {'wall old':>8} {'new':>6} {'CPU old':>8} {'new':>6} {'ratio':>6} {'-base old':>9} {'new':>6} {'ratio':>6}"
          f" {'RSS old':>8} {'new':>6} {'ratio':>6} {'-base old':>9} {'new':>6}")
    for t in a.traces:
        runs = {a.old: [], a.new: []}
        for _ in range(a.runs):
            for b in (a.old, a.new):
                runs[b].append(measure([b, "trace", "analyze", *extra, t]))
        (ow, oc, om), (nw, nc, nm) = ([statistics.median(x) for x in zip(*runs[b])] for b in (a.old, a.new))
        oca, nca = oc - base[a.old][1], nc - base[a.new][1]
        oma, nma = om - base[a.old][2], nm - base[a.new][2]
        print(f"{os.path.basename(t):<36} {ow:8.3f} {nw:6.3f} {oc:8.3f} {nc:6.3f} {nc / oc:6.2f} {oca:9.3f} {nca:6.3f} {nca / oca:6.2f}"
              f" {om:8.1f} {nm:6.1f} {nm / om:6.2f} {oma:9.1f} {nma:6.1f}")

if __name__ == "__main__":
    main()
