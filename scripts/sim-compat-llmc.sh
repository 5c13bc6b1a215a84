#!/usr/bin/env bash
# Runs every kernel of llm.c's dev/cuda programs (github.com/karpathy/llm.c, MIT licence,
# commit f1e2ace) under `kernelab sim run` at reduced sizes, and writes one line per
# program-kernel: the program's own validation (exit code 0) or the first thing that failed.
#   scripts/sim-compat-llmc.sh LLM_C_CHECKOUT OUT_DIR [PROGRAM...]
# The programs are copied to OUT_DIR with their sizes edited (the sed below); nothing else changes.
set -uo pipefail
llmc=${1:?usage: sim-compat-llmc.sh LLM_C_CHECKOUT OUT_DIR [PROGRAM...]}
out=${2:?usage: sim-compat-llmc.sh LLM_C_CHECKOUT OUT_DIR [PROGRAM...]}
shift 2
here=$(cd "$(dirname "$0")/.." && pwd)
kernelab=${KERNELAB:-$here/build/kernelab}
src=$llmc/dev/cuda
[ -f "$src/common.h" ] || { echo "sim-compat-llmc: $src/common.h not found: pass an llm.c checkout" >&2; exit 2; }
mkdir -p "$out" && cp "$src/common.h" "$out/"

# Sizes: B=2 T=128 C=128 OC=256 V=1000 NH=4 L=2, one benchmark repeat; per program below.
sizes() {
  local v=1000 c=128
  case $1 in
    layernorm_backward) c=256 ;;  # kernel 9 asserts C % (32 lanes x 8 bf16) == 0; kernel 8 needs it too
  esac
  sed -E "s/int B = [0-9]+;/int B = 2;/; s/int T = [0-9]+;/int T = 128;/; s/int C = [0-9]+;/int C = $c;/;
          s/int OC = 768 \* 4;/int OC = 256;/; s/int V = [0-9]+;/int V = $v;/; s/int NH = [0-9]+;/int NH = 4;/;
          s/int L = [0-9]+;/int L = 2;/; s/(int|const int) repeat_times = [0-9]+;/\1 repeat_times = 1;/"
}

# The kernel numbers each program's dispatch accepts in its shipped build (bf16 where it
# defines ENABLE_BF16; no cuDNN): attention_forward's 10 needs ENABLE_CUDNN,
# layernorm_backward's 1 and matmul_backward_bias's 5 are fp32-only.
kernels() {
  case $1 in
    attention_backward) echo 1 2 3 4 5 6 7 8 ;;
    attention_forward) echo 1 2 3 4 5 6 ;;
    layernorm_backward) echo 2 3 4 5 6 7 8 9 10 ;;
    matmul_backward_bias) echo 1 2 3 4 7 8 9 ;;
    permute) echo 1 ;;  # one kernel, no kernel number
    *) grep -oE 'case [0-9]+:' "$src/$1.cu" | grep -oE '[0-9]+' | sort -un | tr '\n' ' ' ;;
  esac
}

# Options of `sim run` a program needs.
options() {
  case $1 in
    global_norm) echo --gpu l4 ;;  # kernel 4 asserts grid < 1024 = threads/SM x SMs / 128: false on an H100
  esac
}

programs=("$@")
[ ${#programs[@]} -gt 0 ] || programs=($(cd "$src" && ls *.cu | sed 's/\.cu$//' | grep -v '^nccl_all_reduce$'))
for p in "${programs[@]}"; do
  sizes "$p" < "$src/$p.cu" > "$out/$p.cu"
  for k in $(kernels "$p"); do
    log=$out/$p.$k.txt
    start=$(date +%s)
    timeout 600 "$kernelab" sim run $(options "$p") "$out/$p.cu" -- $k > "$log" 2>&1
    rc=$?
    first=$(grep -v 'cudaEventElapsedTime gives' "$log" | grep -m1 -E 'kernelab sim:|Mismatch|CUDA ERROR|Assertion|error' | cut -c1-300)
    result=pass; [ $rc -eq 0 ] || result=fail
    printf '%s\t%s\t%s\t%s\t%ss\t%s\n' "$p" "$k" "$result" "$rc" "$(( $(date +%s) - start ))" "$first"
  done
done
