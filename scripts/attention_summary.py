#!/usr/bin/env python3
"""attention-bench.sh's JSON files as one table: per shape each rung's median, TFLOP/s (FlashAttention's
count) and % of cuDNN's SDPA from the same run; decode rows also as % of the copy bandwidth the probe
measured (issue 14's target: split-KV at 85% or more from 8k tokens). Only measured points; a file
without points says so.
Usage: attention_summary.py OUTDIR [PROBE_JSON]"""
import json
import pathlib
import sys

from bench_points import measured_files

PEER = {"attention": "cudnn_sdpa", "attention_bwd": "cudnn_sdpa_bwd"}


def find(obj, key):
    """The first value of `key` anywhere in a JSON object."""
    if isinstance(obj, dict):
        if key in obj:
            return obj[key]
        obj = list(obj.values())
    if isinstance(obj, list):
        for x in obj:
            v = find(x, key)
            if v is not None:
                return v
    return None


def main(folder, probe=None):
    copy = None
    if probe and pathlib.Path(probe).is_file():
        copy = find(json.loads(pathlib.Path(probe).read_text()), "copy_bytes_per_s")
    files = measured_files(folder, "attention")
    if files is None:
        return 1
    for stem, points in files:
        op = points[0].get("op", stem.split("-")[0])
        peer = next((p for p in points if p["variant"] == PEER.get(op)), None)
        print(f"{stem} ({points[0]['label']} {points[0]['dtype']})" + ("" if peer or op == "decode" else ": no peer point"))
        for p in sorted(points, key=lambda p: p["median_s"]):
            line = f"  {p['variant']:18s} {p['median_s'] * 1e6:10.1f} us {p['flops'] / p['median_s'] / 1e12:8.1f} TFLOP/s"
            if peer:
                line += f" {100 * peer['median_s'] / p['median_s']:6.1f}% of {peer['variant']}"
            if op == "decode" and p.get("bytes"):
                rate = p["bytes"] / p["median_s"]
                line += f" {rate / 1e9:8.1f} GB/s" + (f" {100 * rate / copy:5.1f}% of the copy bandwidth" if copy else "")
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
