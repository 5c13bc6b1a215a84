#!/usr/bin/env bash
# The attention ladder on a GPU (issue 14's benchmarks), every rung of a shape in one bench call
# so that ratios come from one run; attention_summary.py prints each as % of cuDNN's SDPA and the
# decode rungs as % of the probe's copy bandwidth.
#   forward and backward: FlashAttention's benchmark shapes, batch x seq = 16k tokens, 2048 hidden
#     (heads = 2048 / d), d 64/128/256, seq 512-16k, causal and not; Llama-3 70B's GQA (64 query
#     heads, 8 kv heads, d 128) at 8k
#   the short sequences where the naive and CUDA-core rungs may beat the tensor-core one
#   decode: batch 1-64, context 1k-64k, Llama-3 heads, 16-token pages (and 256)
# Usage: scripts/attention-bench.sh KERNELAB OUTDIR [BUDGET_S] [PROBE_JSON]; stops starting shapes after BUDGET_S.
set -u
kl=$1 out=$2 budget=${3:-150} probe=${4:-}
mkdir -p "$out"
start=$(date +%s) failed=0
run() {  # NAME OP ARGS...: one bench call into NAME.json, unless the budget is spent
  local name=$1 op=$2; shift 2
  if [ $(( $(date +%s) - start )) -ge "$budget" ]; then echo "attention bench: ${budget} s spent; $name skipped"; return; fi
  echo "-- $op $name"
  "$kl" bench "$op" --backend cuda "$@" --max-seconds 0.2 --json > "$out/$name.json" || { echo "$op $name failed"; failed=1; }
}
fast="cuda_flash2_mma cuda_hopper_wgmma cudnn_sdpa"  # past 2k tokens the naive rungs take seconds (and S takes gigabytes)
for d in 128 64 256; do
  for s in 512 1024 2048 4096 8192 16384; do
    for causal in 0 1; do
      only=(); [ "$s" -gt 2048 ] && only=(--variant $fast)
      run "fwd-d$d-s$s-c$causal" attention --batch $((16384 / s)) --heads $((2048 / d)) --kv-heads $((2048 / d)) --seq-q "$s" \
        --seq-kv "$s" --head-dim "$d" --causal "$causal" --dtype bf16 "${only[@]}"
    done
  done
done
for d in 128 64; do
  for s in 1024 4096 16384; do
    only=(); [ "$s" -gt 2048 ] && only=(--variant cuda_flash2_mma cudnn_sdpa_bwd)
    run "bwd-d$d-s$s-c1" attention_bwd --batch $((16384 / s)) --heads $((2048 / d)) --kv-heads $((2048 / d)) --seq-q "$s" \
      --seq-kv "$s" --head-dim "$d" --causal 1 --dtype bf16 "${only[@]}"
  done
done
run "fwd-llama3-gqa-s8192" attention --batch 1 --heads 64 --kv-heads 8 --seq-q 8192 --seq-kv 8192 --head-dim 128 --causal 1 \
  --dtype bf16 --variant $fast
run "bwd-llama3-gqa-s8192" attention_bwd --batch 1 --heads 64 --kv-heads 8 --seq-q 8192 --seq-kv 8192 --head-dim 128 --causal 1 \
  --dtype bf16 --variant cuda_flash2_mma cudnn_sdpa_bwd
run "bwd-deterministic-d128-s4096" attention_bwd --batch 4 --heads 16 --kv-heads 16 --seq-q 4096 --seq-kv 4096 --head-dim 128 \
  --causal 1 --deterministic 1 --dtype bf16 --variant cuda_flash2_mma cudnn_sdpa_bwd
for s in 64 128 256 512; do  # where the tensor-core rung stops winning
  run "short-s$s" attention --batch 8 --heads 16 --kv-heads 16 --seq-q "$s" --seq-kv "$s" --head-dim 128 --dtype bf16
done
for bc in 1x1024 1x8192 1x65536 8x8192 8x65536 64x1024 64x8192; do
  for ps in 16 256; do
    [ "$ps" = 256 ] && [ "${bc#*x}" != 8192 ] && continue
    run "decode-b${bc%x*}-ctx${bc#*x}-p$ps" decode --batch "${bc%x*}" --seq-q 1 --seq-kv "${bc#*x}" --heads 64 --kv-heads 8 \
      --head-dim 128 --page-size "$ps" --dtype bf16
  done
done
# PyTorch's SDPA (flash and cuDNN backends) on the d 128 shapes, where the device has torch.
if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  shapes=(); for s in 1024 4096 16384; do shapes+=(--shape "$((16384 / s)),16,16,$s,$s,128,1,bf16"); done
  python3 "$(dirname "$0")/attention_torch_peer.py" "${shapes[@]}" --shape 1,64,8,8192,8192,128,1,bf16 > "$out/torch_sdpa.jsonl" ||
    { echo "torch SDPA peer failed"; failed=1; }
  cat "$out/torch_sdpa.jsonl"
else
  echo "no PyTorch with CUDA here: its SDPA rows are not run" | tee "$out/torch_sdpa.skipped"
fi
python3 "$(dirname "$0")/attention_summary.py" "$out" $probe | tee "$out/summary.txt" || failed=1
exit $failed
