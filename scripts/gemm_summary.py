#!/usr/bin/env python3
"""Each gemm rung's median as a percentage of its peer's in the same bench run (gemm-bench.sh's
JSON files): cuBLASLt for fp16/bf16, cuBLAS SGEMM for fp32 (cuBLAS TF32 listed beside it), and per
shape the fastest kernel of ours. Only measured points; a file without points says so."""
import json
import pathlib
import sys

PEER = {"bf16": "cublaslt", "fp16": "cublaslt", "fp32": "cublas"}


def main(folder):
    files = sorted(pathlib.Path(folder).glob("*.json"))
    if not files:
        print(f"no gemm bench results in {folder}")
        return 1
    for f in files:
        try:
            points = json.loads(f.read_text()).get("points", [])
        except json.JSONDecodeError:
            print(f"{f.stem}: not JSON (the bench call failed; see its log)")
            continue
        if not points:
            print(f"{f.stem}: no points (nothing ran)")
            continue
        dtype = points[0]["dtype"]
        peer = next((p for p in points if p["variant"] == PEER.get(dtype)), None)
        label = points[0]["label"].split(",a_layout")[0]
        print(f"{f.stem} ({label} {dtype})" + ("" if peer else ": no peer point, ratios omitted"))
        ours = [p for p in points if not p.get("peer")]
        best = min(ours, key=lambda p: p["median_s"]) if ours else None
        for p in sorted(points, key=lambda p: p["median_s"]):
            tflops = p["flops"] / p["median_s"] / 1e12
            ratio = f"{100 * peer['median_s'] / p['median_s']:6.1f}% of {peer['variant']}" if peer else ""
            mark = "  <- best of ours" if p is best else ""
            print(f"  {p['variant']:20s} {p['median_s'] * 1e6:10.1f} us {tflops:8.1f} TFLOP/s {ratio}{mark}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
