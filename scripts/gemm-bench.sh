#!/usr/bin/env bash
# The gemm ladder on a GPU (issue 13's benchmarks): square 1024-8192 and the LLM shapes
# M in {1, 16, 64, 128, 512, 4096} x (N, K) in {(4096, 4096), (14336, 4096), (4096, 14336)}, bf16
# (weights column-major),
# plus fp32 squares, every rung in one bench call per shape (so ratios come from one run), then
# each rung as % of its peer (cuBLASLt for bf16, cuBLAS SGEMM for fp32) in gemm/summary.txt.
# Usage: scripts/gemm-bench.sh KERNELAB OUTDIR [BUDGET_S]; stops starting shapes after BUDGET_S.
set -u
kl=$1 out=$2 budget=${3:-150}
mkdir -p "$out"
start=$(date +%s) failed=0
run() {  # NAME ARGS...: one bench call into NAME.json, unless the budget is spent
  local name=$1; shift
  if [ $(( $(date +%s) - start )) -ge "$budget" ]; then echo "gemm bench: ${budget} s spent; $name skipped"; return; fi
  echo "-- gemm $name"
  "$kl" bench gemm --backend cuda "$@" --max-seconds 0.2 --json > "$out/$name.json" || { echo "gemm $name failed"; failed=1; }
}
# B row-major: the mma.sync rungs (v08-v10); B column-major (K-major, a Linear layer's [out, in]
# weights): the Hopper rungs (v11, v12). cuBLASLt runs in both.
for s in 1024 2048 4096 8192; do
  run "square-bf16-$s" --m "$s" --n "$s" --k "$s" --dtype bf16
  run "square-bf16-bcol-$s" --m "$s" --n "$s" --k "$s" --dtype bf16 --b-layout col
done
for nk in 4096x4096 14336x4096 4096x14336; do
  for m in 1 16 64 128 512 4096; do
    run "llm-bf16-m$m-n${nk%x*}-k${nk#*x}" --m "$m" --n "${nk%x*}" --k "${nk#*x}" --dtype bf16 --b-layout col
  done
done
for s in 1024 4096; do run "square-fp32-$s" --m "$s" --n "$s" --k "$s" --dtype fp32; done
# Decode shapes with B row-major (the split-K rung's layout), and where split-K stops winning.
for nk in 4096x4096 14336x4096 4096x14336; do
  for m in 1 16 64; do
    run "llm-bf16-brow-m$m-n${nk%x*}-k${nk#*x}" --m "$m" --n "${nk%x*}" --k "${nk#*x}" --dtype bf16
  done
done
for nk in 4096x4096 4096x14336; do
  if [ $(( $(date +%s) - start )) -ge "$budget" ]; then echo "gemm bench: ${budget} s spent; sweep skipped"; break; fi
  echo "-- gemm sweep m, n x k = $nk"
  "$kl" sweep gemm --backend cuda --variant cuda_cp_async cuda_split_k cublaslt --n "${nk%x*}" --k "${nk#*x}" --dtype bf16 \
    --axis m=1,2,4,8,16,32,64,128,256,512 --max-seconds 0.1 --json > "$out/sweep-splitk-n${nk%x*}-k${nk#*x}.sweep" ||
    { echo "gemm sweep $nk failed"; failed=1; }
done
python3 "$(dirname "$0")/gemm_summary.py" "$out" | tee "$out/summary.txt" || failed=1
exit $failed
