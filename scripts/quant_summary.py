#!/usr/bin/env python3
"""The quantized GEMMs' figures (quant-bench.sh's files). W4A16 against the unquantized GEMM (the
`sweep --against gemm` files): per shape and M, each rung's speedup over gemm's fastest variant in the
same run, the M where it stops paying, and the target (>= 3.5x at M <= 16) for the best of the
fragment-order rung and the decode GEMV at each M. W8A8 and FP8 (the bench files): each rung as % of its cuBLASLt peer in the same run
(targets 80% int8, 90% fp8). Only measured points."""
import json
import pathlib
import sys

from bench_points import measured_files

PEER_TARGET = {"gemm_w8a8": ("cublaslt_int8", 80), "gemm_fp8": ("cublaslt_fp8", 90)}
TARGET_RUNGS, TARGET_M, TARGET = ("cuda_fragment_lop3", "cuda_decode_gemv"), 16, 3.5


def peers(folder):
    files = measured_files(folder, "int8/fp8")
    for stem, points in files or []:
        op = points[0]["op"]
        peer_name, target = PEER_TARGET.get(op, (None, None))
        peer = next((p for p in points if p["variant"] == peer_name), None)
        print(f"{stem} ({points[0]['label']} {points[0]['dtype']})" + ("" if peer else ": no peer point, ratios omitted"))
        for p in sorted(points, key=lambda p: p["median_s"]):
            ratio = f"{100 * peer['median_s'] / p['median_s']:6.1f}% of {peer_name} (target {target}%)" if peer else ""
            print(f"  {p['variant']:20s} {p['median_s'] * 1e6:10.1f} us {p['flops'] / p['median_s'] / 1e12:8.1f} TFLOP/s {ratio}")


def main(folder):
    peers(folder)
    files = sorted(pathlib.Path(folder).glob("*.sweep"))
    if not files:
        print(f"no w4a16 sweeps in {folder}")
        return 1
    for f in files:
        try:
            against = json.loads(f.read_text()).get("against")
        except json.JSONDecodeError:
            print(f"{f.stem}: not JSON (the sweep failed; see its log)")
            continue
        if not against or not against.get("crossovers"):
            print(f"{f.stem}: no points against gemm (nothing ran)")
            continue
        base = {p["value"]: p for p in against["points"]}
        print(f"{f.stem}: speedup over gemm's fastest variant at each m")
        for m, p in base.items():
            print(f"  m={m:>5}: gemm {p['variant']} {p['median_s'] * 1e6:.1f} us")
        best = {}  # m -> (speedup, rung): the best target rung at each m <= TARGET_M
        for c in against["crossovers"]:
            speeds = ", ".join(f"{s['speedup']:.2f}x at m={s['value']}" for s in c["speedups"])
            print(f"  {c['variant']:24s} {speeds}; {c['story']}")
            if c["variant"] in TARGET_RUNGS:
                for s in c["speedups"]:
                    if int(s["value"]) <= TARGET_M and s["speedup"] > best.get(s["value"], (0, ""))[0]:
                        best[s["value"]] = (s["speedup"], c["variant"])
        if best:
            lowest = min(best.values())
            verdict = "met" if lowest[0] >= TARGET else "not met"
            each = ", ".join(f"m={m}: {x:.2f}x {r}" for m, (x, r) in best.items())
            print(f"    target >= {TARGET}x at m <= {TARGET_M}: {verdict} (best rung at each m: {each})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
