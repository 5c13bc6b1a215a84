#!/usr/bin/env python3
"""Each gemm rung's median as a percentage of its peer's in the same bench run (gemm-bench.sh's
JSON files): cuBLASLt for fp16/bf16, cuBLAS SGEMM for fp32 (cuBLAS TF32 listed beside it), and per
shape the fastest kernel of ours. Only measured points; a file without points says so."""
import sys

from bench_points import measured_files

PEER = {"bf16": "cublaslt", "fp16": "cublaslt", "fp32": "cublas"}


def main(folder):
    files = measured_files(folder, "gemm")
    if files is None:
        return 1
    for stem, points in files:
        dtype = points[0]["dtype"]
        peer = next((p for p in points if p["variant"] == PEER.get(dtype)), None)
        label = points[0]["label"].split(",a_layout")[0]
        print(f"{stem} ({label} {dtype})" + ("" if peer else ": no peer point, ratios omitted"))
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
