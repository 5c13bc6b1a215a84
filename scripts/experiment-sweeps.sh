#!/usr/bin/env bash
# The experiments' sweeps (README "Experiments"): one JSON file per sweep in OUTDIR, from
# `kernelab sweep --json`. BACKEND cpu runs the experiments that have a CPU twin; cuda runs all,
# exp_launch on every backend present (the CPU rung is its baseline). Exit 1 if a sweep failed.
#   scripts/experiment-sweeps.sh KERNELAB BACKEND OUTDIR
set -uo pipefail
kl=$1 backend=$2 out=$3
mkdir -p "$out"
failed=0
sweep() {  # name backends op --axis ... [flags...]; backends "" = every backend present
  local name=$1 on=$2; shift 2
  if ! "$kl" sweep "$@" ${on:+--backend "$on"} --max-seconds 0.2 --json > "$out/$name.json" 2> "$out/$name.err"; then
    echo "sweep $name failed: $(tail -1 "$out/$name.err")"
    failed=1
  fi
}
sweep stride_b4 "$backend" exp_stride --axis stride=1,2,4,8,16,32 --bytes 4
sweep stride_b16 "$backend" exp_stride --axis stride=1,2,4,8,16,32 --bytes 16
sweep launch "" exp_launch --axis n=256,4096,65536,1048576,16777216
sweep cache_bandwidth "$backend" exp_cache_bandwidth --axis ws_kib=16,64,256,1024,4096,16384,65536,262144,1048576
sweep cache_latency "$backend" exp_cache_latency --axis ws_kib=16,64,256,1024,4096,16384,65536,262144,1048576
if [ "$backend" = cuda ]; then
  sweep occupancy cuda exp_occupancy --axis blocks_per_sm=1,2,4,8,16 --threads 128
  sweep smem_banks cuda exp_smem_banks --axis stride=1,2,4,8,16,32
  sweep divergence cuda exp_divergence --axis paths=1,2,4,8,16,32
fi
exit $failed
