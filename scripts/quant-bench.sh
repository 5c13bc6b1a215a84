#!/usr/bin/env bash
# The quantized GEMMs on a GPU (issue 15's benchmarks). W4A16: int4 weights, group 128, fp16
# activations, on the Linear shapes (N, K) in {(4096, 4096), (14336, 4096), (4096, 14336)} at M in
# {1, 16, 64, 128, 512}, each rung against the unquantized GEMM's fastest variant (cuBLAS(Lt) or
# ours) on the same shape in the same run (`sweep --against gemm`), plus GPTQ zero points on
# 4096 x 4096. W8A8 int8 and FP8 (tensor and 128-block scales) at 4096^3 and 8192^3, each rung
# beside its cuBLASLt peer in one bench call. summary.txt: W4A16's speedups, crossover M and the
# 3.5x target at M <= 16; int8 and fp8 as % of cuBLASLt (targets 80% and 90%).
# Usage: scripts/quant-bench.sh KERNELAB OUTDIR [BUDGET_S]; stops starting runs after BUDGET_S.
set -u
kl=$1 out=$2 budget=${3:-90}
mkdir -p "$out"
start=$(date +%s) failed=0
sweep() {  # NAME ARGS...: one sweep over M into NAME.sweep, unless the budget is spent
  local name=$1; shift
  if [ $(( $(date +%s) - start )) -ge "$budget" ]; then echo "quant bench: ${budget} s spent; $name skipped"; return; fi
  echo "-- w4a16 $name"
  "$kl" sweep gemm_w4a16 --backend cuda --dtype fp16 --axis m=1,16,64,128,512 --against gemm --max-seconds 0.1 --json "$@" \
    > "$out/$name.sweep" || { echo "w4a16 $name failed"; failed=1; }
}
for nk in 4096x4096 14336x4096 4096x14336; do sweep "n${nk%x*}-k${nk#*x}" --n "${nk%x*}" --k "${nk#*x}"; done
sweep "n4096-k4096-gptq" --n 4096 --k 4096 --zero gptq
bench() {  # NAME OP ARGS...: one bench call into NAME.json, unless the budget is spent
  local name=$1 op=$2; shift 2
  if [ $(( $(date +%s) - start )) -ge "$budget" ]; then echo "quant bench: ${budget} s spent; $name skipped"; return; fi
  echo "-- $op $name"
  "$kl" bench "$op" --backend cuda "$@" --max-seconds 0.2 --json > "$out/$name.json" || { echo "$op $name failed"; failed=1; }
}
for s in 4096 8192; do
  bench "w8a8-$s" gemm_w8a8 --m "$s" --n "$s" --k "$s" --dtype bf16
  bench "fp8-tensor-$s" gemm_fp8 --m "$s" --n "$s" --k "$s" --dtype bf16 --scaling tensor
  bench "fp8-block-$s" gemm_fp8 --m "$s" --n "$s" --k "$s" --dtype bf16 --scaling block
done
python3 "$(dirname "$0")/quant_summary.py" "$out" | tee "$out/summary.txt" || failed=1
exit $failed
