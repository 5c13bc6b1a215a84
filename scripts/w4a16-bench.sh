#!/usr/bin/env bash
# W4A16 on a GPU (issue 15's benchmarks): int4 weights, group 128, fp16 activations, on the Linear
# shapes (N, K) in {(4096, 4096), (14336, 4096), (4096, 14336)} at M in {1, 16, 64, 128, 512}, each
# rung against the unquantized GEMM's fastest variant (cuBLAS(Lt) or ours) on the same shape in the
# same run (`sweep --against gemm`), plus GPTQ zero points on 4096 x 4096. w4a16/summary.txt: each
# rung's speedup, the crossover M, and the issue's target (>= 3.5x at M <= 16).
# Usage: scripts/w4a16-bench.sh KERNELAB OUTDIR [BUDGET_S]; stops starting sweeps after BUDGET_S.
set -u
kl=$1 out=$2 budget=${3:-90}
mkdir -p "$out"
start=$(date +%s) failed=0
sweep() {  # NAME ARGS...: one sweep over M into NAME.sweep, unless the budget is spent
  local name=$1; shift
  if [ $(( $(date +%s) - start )) -ge "$budget" ]; then echo "w4a16 bench: ${budget} s spent; $name skipped"; return; fi
  echo "-- w4a16 $name"
  "$kl" sweep gemm_w4a16 --backend cuda --dtype fp16 --axis m=1,16,64,128,512 --against gemm --max-seconds 0.1 --json "$@" \
    > "$out/$name.sweep" || { echo "w4a16 $name failed"; failed=1; }
}
for nk in 4096x4096 14336x4096 4096x14336; do sweep "n${nk%x*}-k${nk#*x}" --n "${nk%x*}" --k "${nk#*x}"; done
sweep "n4096-k4096-gptq" --n 4096 --k 4096 --zero gptq
python3 "$(dirname "$0")/w4a16_summary.py" "$out" | tee "$out/summary.txt" || failed=1
exit $failed
