#!/usr/bin/env python3
"""The short table scripts/device-check.sh prints last, from what it wrote to OUT: the GPU's
measured ceilings, the memory-bound ladders on 256 MB+ working sets against the measured copy
bandwidth (issue target: best rung >= 85%), each rung's speed-up over the rung below, and one
line per experiment sweep. Only figures found in OUT's files are printed."""
import glob
import json
import os
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def main(out):
    probe = load(os.path.join(out, "probe.json")) or {}
    gpu = probe.get("gpu") or {}
    copy = gpu.get("copy_bytes_per_s")
    if gpu:
        rates = ", ".join(f"{k} {v['flops_per_s'] / 1e12:.0f}" for k, v in gpu.get("gemm", {}).items())
        print(f"GPU {gpu['gpu']}: copy {copy / 1e9:.0f} GB/s; cuBLASLt TFLOP/s: {rates}")
    for path in sorted(glob.glob(os.path.join(out, "big", "*.json"))):
        points = (load(path) or {}).get("points", [])
        below = None
        for p in points:
            share = f"{100 * p['gbps'] * 1e9 / copy:5.1f}% of copy" if copy else ""
            step = f"x{below / p['median_s']:.2f} over below" if below else ""
            print(f"  {p['op']:<10} {p['variant']:<20} {p['median_s'] * 1e3:8.3f} ms {p['gbps']:8.1f} GB/s {share} {step}")
            below = p["median_s"]
    for path in sorted(glob.glob(os.path.join(out, "sweeps", "*.json"))):
        d = load(path)
        if not d:
            print(f"  sweep {os.path.basename(path)}: no result")
            continue
        axis = d["axis"]
        by_variant = {}
        for p in d["points"]:
            value = dict(kv.split("=") for kv in p["shape"].split(","))[axis]
            by_variant.setdefault(f"{p['backend']}/{p['variant']}", []).append((value, p["median_s"], p["gbps"]))
        for name, runs in by_variant.items():
            cells = " ".join(f"{v}:{t * 1e6:.1f}us/{g:.0f}GB/s" for v, t, g in runs)
            print(f"  {os.path.basename(path)[:-5]:<16} {name:<22} {axis}= {cells}")
        for c in d.get("crossovers", []):
            print(f"    crossover {axis}={c['value']}: {c['variant']} is {c['speedup']:.2f}x the speed of {c['below']}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "out")
