#!/usr/bin/env bash
# The memory-bound ladders on this CPU: measures the ceilings (probe), then every CPU rung of the
# memory-bound ops on a working set past every cache (16384 x 8192: 512 MiB of fp32 in, as much
# out), in fp32 and bf16, and writes one results file per machine kind,
# bench/results/cpu/<cpu>/<date>-<commit>.json, with the probe (CPU model, ISA of the build and of
# the CPU, huge pages, triad) and every point. Run it on a quiet machine: the probe and the
# points share the memory bus with everything else.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${KERNELAB:-build/kernelab}
[ -x "$bin" ] || make build
commit=$(git describe --always --dirty --abbrev=12)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" probe --json > "$tmp/probe.json"
ops="softmax layernorm rmsnorm transpose reduce bias_gelu"
for dtype in fp32 bf16; do
  for op in $ops; do
    "$bin" bench "$op" --rows 16384 --cols 8192 --dtype "$dtype" --backend cpu --max-seconds 0.5 --json > "$tmp/$op-$dtype.json"
  done
done
python3 - "$tmp" "$commit" "$ops" <<'PY'
import json, os, re, sys, time
tmp, commit, ops = sys.argv[1], sys.argv[2], sys.argv[3].split()
probe = json.load(open(f"{tmp}/probe.json"))
kind = re.sub(r"[^a-z0-9]+", "-", re.sub(r"\((r|tm)\)|processor|cpu", "", probe["cpu"].lower())).strip("-") or "unknown"
points = []
for dtype in ["fp32", "bf16"]:
    for op in ops:
        points += json.load(open(f"{tmp}/{op}-{dtype}.json"))["points"]
out = f"bench/results/cpu/{kind}/{time.strftime('%Y-%m-%d', time.gmtime())}-{commit}.json"
os.makedirs(os.path.dirname(out), exist_ok=True)
command = "kernelab bench OP --backend cpu --rows 16384 --cols 8192 --dtype DTYPE --max-seconds 0.5 --json"
json.dump({"command": command, "probe": probe, "points": points}, open(out, "w"), indent=2)
print(f"wrote {out}")
print(f"{probe['cpu']}: {probe['threads']} threads, {probe['isa_used']} rungs ({probe['isa_extensions']}) on an {probe['isa_cpu']} CPU, "
      f"huge pages {probe['huge_pages']}, triad {probe['triad_bytes_per_s'] / 1e9:.1f} GB/s")
for p in points:
    print(f"{p['op']:<10} {p['variant']:<12} {p['dtype']:<5} {p['median_s']*1e3:8.1f} ms {p['gbps']:6.1f} GB/s {p['pct_of_bound']:6.1f}% of bound")
PY
