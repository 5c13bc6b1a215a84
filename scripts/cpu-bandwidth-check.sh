#!/usr/bin/env bash
# The foundation's bandwidth benchmark on this CPU: measures the ceilings (probe), then the
# ladders of the memory-bound ops on a working set past every cache, and writes one results file
# bench/results/cpu/<date>-<commit>.json with the probe and every point.
# Run it on a quiet machine: the probe and the points share the memory bus with everything else.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/kernelab
[ -x "$bin" ] || make build
commit=$(git describe --always --dirty --abbrev=12)
out=bench/results/cpu/$(date -u +%Y-%m-%d)-$commit.json
mkdir -p "$(dirname "$out")"
tmp=$(mktemp -d)
"$bin" probe --json > "$tmp/probe.json"
for op in softmax layernorm rmsnorm transpose reduce; do
  "$bin" bench "$op" --rows 16384 --cols 8192 --dtype fp32 --backend cpu --json > "$tmp/$op.json"
done
python3 - "$tmp" "$out" <<'PY'
import json, sys
tmp, out = sys.argv[1], sys.argv[2]
points = []
for op in ["softmax", "layernorm", "rmsnorm", "transpose", "reduce"]:
    points += json.load(open(f"{tmp}/{op}.json"))["points"]
json.dump({"probe": json.load(open(f"{tmp}/probe.json")), "points": points}, open(out, "w"), indent=2)
print(f"wrote {out}")
for p in points:
    print(f"{p['op']:<10} {p['variant']:<10} {p['median_s']*1e3:8.1f} ms {p['gbps']:6.1f} GB/s {p['pct_of_bound']:6.1f}% of bound")
PY
rm -rf "$tmp"
