#!/usr/bin/env python3
"""W4A16 against the unquantized GEMM (w4a16-bench.sh's `sweep --against gemm` files): per shape and
M, each rung's speedup over gemm's fastest variant in the same run, the M where it stops paying, and
the issue's target for the fragment-order rung (>= 3.5x at M <= 16). Only measured points."""
import json
import pathlib
import sys

TARGET_RUNG, TARGET_M, TARGET = "cuda_fragment_lop3", 16, 3.5


def main(folder):
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
        for c in against["crossovers"]:
            speeds = ", ".join(f"{s['speedup']:.2f}x at m={s['value']}" for s in c["speedups"])
            print(f"  {c['variant']:24s} {speeds}; {c['story']}")
            if c["variant"] == TARGET_RUNG:
                small = [s["speedup"] for s in c["speedups"] if int(s["value"]) <= TARGET_M]
                if small:
                    verdict = "met" if min(small) >= TARGET else "not met"
                    print(f"    target >= {TARGET}x at m <= {TARGET_M}: {verdict} (lowest {min(small):.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
