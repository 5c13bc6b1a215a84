#!/usr/bin/env bash
# The collectives on this machine's CPU ranks (MPI processes on one host, shared memory): own ring
# and tree all-reduce beside MPI_Allreduce at 64-256 MiB (the issue's bar: own ring >= 90% of
# MPI_Allreduce's bus bandwidth at >= 64 MiB), three rounds, and the other collectives at 64 MiB.
# Writes bench/results/cpu/comm-<date>-<commit>.json (or $COMM_OUT) with the machine's copy
# bandwidth (probe's STREAM triad) and the load average beside the points: on a shared VM, compare
# within a round. RANKS=N picks the ranks (default 2); scripts/device-check.sh runs it with a core
# per rank on the GPU machine's host.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${KERNELAB:-build/kernelab}
ranks=${RANKS:-2}
rounds=${ROUNDS:-3}      # all-reduce rounds (3 take 3.5 minutes with 2 ranks here)
largest=${LARGEST:-256M}  # the all-reduce sweep's largest size, from 64M
[ -x "$bin" ] || make build
commit=${KERNELAB_COMMIT:-$(git describe --always --dirty --abbrev=12)}
out=${COMM_OUT:-bench/results/cpu/comm-$(date -u +%Y-%m-%d)-$commit.json}
mkdir -p "$(dirname "$out")"
tmp=$(mktemp -d)
"$bin" probe --json > "$tmp/probe.json"
cat /proc/loadavg > "$tmp/load_before"
for round in $(seq "$rounds"); do
  "$bin" comm bench allreduce --ranks "$ranks" -b 64M -e "$largest" -f 2 -n 10 -w 2 --json --dump-dir "$tmp/dumps" > "$tmp/allreduce-$round.json"
done
for op in allgather reducescatter alltoall; do
  "$bin" comm bench "$op" --ranks "$ranks" -b 64M -e 64M -n 10 -w 2 --json --dump-dir "$tmp/dumps" > "$tmp/$op.json"
done
cat /proc/loadavg > "$tmp/load_after"
python3 - "$tmp" "$out" "$ranks" "$rounds" <<'PY'
import json, sys, platform
tmp, out, ranks, nrounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
probe = json.load(open(f"{tmp}/probe.json"))
rounds = [json.load(open(f"{tmp}/allreduce-{r}.json")) for r in range(1, nrounds + 1)]
others = {op: json.load(open(f"{tmp}/{op}.json")) for op in ("allgather", "reducescatter", "alltoall")}
result = {"machine": {"cpu": probe.get("cpu"), "threads": probe.get("threads"),
                      "copy_bandwidth_bytes_per_s": probe.get("triad_bytes_per_s"),
                      "copy_bandwidth_source": "kernelab probe: STREAM triad",
                      "load_before": open(f"{tmp}/load_before").read().split()[:3],
                      "load_after": open(f"{tmp}/load_after").read().split()[:3]},
          "ranks": ranks, "allreduce_rounds": rounds, "others": others}
json.dump(result, open(out, "w"), indent=1)
print(f"wrote {out}; copy bandwidth (triad) {probe['triad_bytes_per_s']/1e9:.1f} GB/s")
print("round size_MiB placement ring_busbw tree_busbw library_busbw ring/library")
for r, run in enumerate(rounds, 1):
    algos = {a["algo"]: a["rows"] for a in run["algos"]}
    for i, row in enumerate(algos["ring"]):
        for place in ("out_of_place", "in_place"):
            ring, tree, lib = (algos[a][i][place]["busbw_gbs"] for a in ("ring", "tree", "library"))
            print(f"{r} {row['size'] >> 20} {place} {ring:.2f} {tree:.2f} {lib:.2f} {ring / lib:.2f}")
for op, run in others.items():
    for a in run["algos"]:
        row = a["rows"][0]
        print(f"{op} {a['algo']} {row['size'] >> 20} MiB busbw oop {row['out_of_place']['busbw_gbs']:.2f} ip {row['in_place']['busbw_gbs']:.2f}")
PY
rm -rf "$tmp"
