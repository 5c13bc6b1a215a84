#!/usr/bin/env bash
# The one command for a session with a lent GPU (see ../shared/device-runbook.md). It runs the
# binaries scripts/device-prepare.sh built here (.device-bin.tar.xz, carried by the call), or builds
# kernelab there when they will not run, then spends the window most valuable first:
#   1. the GPU, driver and clocks; where the CUDA libraries were found
#   2. the tests/sim programs on the chip (the simulator's twins against the instructions), and
#      compute-sanitizer on the planted bugs the simulator's checkers catch
#   3. probe --gpu (copy bandwidth, cuBLASLt rates): probe.json
#   4. check --backend cuda, one process per op (a kernel that hangs costs its op alone): check/
#   5. the quantized, gemm and attention ladders at their headline shapes (quant/, gemm/, attention/),
#      the fused op's generated kernels beside PyTorch eager and torch.compile (fused/),
#      ncu's sections for the quantized rungs under their targets (tune/),
#      and the memory-bound ladders on 256 MB working sets (big/): bench points, each timed only
#      after its output passed the reference check (the points bench/results/h200/ keeps)
#   6. the simulator's memory counts beside Nsight Compute's (ncu/), racecheck over rungs (sanitizer/)
#   7. a CUPTI trace, `comm check --transport nccl` with 2 and 3 ranks on the GPU and `comm bench
#      --transport nccl` with 2 (nccl/; mpirun the image's or the carried OpenMPI's, NCCL the
#      carried 2.30), the CPU collectives with a core per rank (comm-cpu-*),
#      the experiment sweeps, and `report --backend cuda` with the time left
# Each step has its own budget under one deadline (KERNELAB_DEADLINE_S, default 540 s): a step that
# would pass it is skipped with a line saying so. Everything lands in a work folder that is packed
# into $OUT/results.tgz after every step (the device tool returns at most 8 files), beside
# $OUT/log.txt and $OUT/summary.txt. Without a GPU it says so and stops, unless
# KERNELAB_DEVICE_DRYRUN=1 (every step runs and fails fast: a test of this script).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
OUT=${OUT:-./out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
W=${KERNELAB_DEVICE_WORK:-/tmp/kernelab-device}
rm -rf "$W" && mkdir -p "$W"
exec > >(tee "$OUT/log.txt") 2>&1
start=$(date +%s)
deadline=${KERNELAB_DEADLINE_S:-540}
failures=() skipped=()
elapsed() { echo $(( $(date +%s) - start )); }
pack() { tar czf "$OUT/results.tgz.part" -C "$W" . 2>/dev/null && mv "$OUT/results.tgz.part" "$OUT/results.tgz"; }

# step NAME BUDGET COMMAND...: COMMAND under a timeout of BUDGET seconds or the time left before the
# deadline, whichever is less; skipped when under 15 s are left. Failures are listed at the end.
# (The timeouts inside steps run --foreground, in this one's process group, so its kill reaches them.)
step() {
  local name=$1 budget=$2; shift 2
  local left=$(( deadline - $(elapsed) ))
  if [ "$left" -lt 15 ]; then
    echo "== $name: skipped, $(elapsed) s of the ${deadline} s deadline are spent"; skipped+=("$name"); return 1
  fi
  [ "$budget" -gt "$left" ] && budget=$left
  echo; echo "== $name ($(elapsed) s; at most $budget s)"
  timeout -k 5 "$budget" "$@"
  local rc=$?
  [ $rc -eq 124 ] && echo "$name: stopped at its $budget s"
  [ $rc -ne 0 ] && failures+=("$name (exit $rc)")
  pack
  return $rc
}

echo "== machine"
gpu=0
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  gpu=1
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,power.limit,temperature.gpu \
    --format=csv | tee "$W/gpu.txt"
  nvidia-smi -q > "$W/nvidia-smi-q.txt" 2>&1
  # The host, for the CPU ladders on another x86 kind, and the NCCL the image's PyTorch carries.
  lscpu > "$W/lscpu.txt" 2>&1
  python3 - >> "$W/gpu.txt" 2>&1 <<'PY'
import importlib.metadata as m
def version(p):
    try: return m.version(p)
    except m.PackageNotFoundError: return "absent"
print("; ".join(f"{p} {version(p)}" for p in ("torch", "nvidia-nccl-cu13", "nvidia-cublas", "nvidia-cudnn-cu13")))
PY
elif [ "${KERNELAB_DEVICE_DRYRUN:-0}" = 1 ]; then
  echo "NO GPU FOUND: dry run, every step runs and is expected to fail fast" | tee "$W/gpu.txt"
else
  echo "NO GPU FOUND: nvidia-smi is missing or lists no device; nothing here needs this script" | tee "$W/gpu.txt"
  pack; exit 1
fi

# The CUDA libraries: the toolkit's, then those of the image's Python packages (cuBLAS, cuDNN, NCCL, CUPTI).
libdirs=$(python3 - <<'PY' 2>/dev/null
import glob, site
print(":".join(sorted(d for p in site.getsitepackages() for d in glob.glob(p + "/nvidia/*/lib"))))
PY
)
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda/extras/CUPTI/lib64; do
  [ -d "$d" ] && libdirs="$d${libdirs:+:$libdirs}"
done
echo "CUDA library folders: $libdirs" | tee -a "$W/gpu.txt"
export LD_LIBRARY_PATH="$root/.device-bin/lib:$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$PATH:/usr/local/cuda/bin"
export KERNELAB_PROBE_FILE="$W/host-ceilings.json"

if [ -f .device-bin.tar.xz ]; then  # scripts/device-prepare.sh's archive, as the call carried it
  tar xJf .device-bin.tar.xz 2>/dev/null || python3 -c "import tarfile; tarfile.open('.device-bin.tar.xz').extractall()"
fi
echo "binaries built at $(cat .device-bin/commit 2>/dev/null || echo 'unknown (no .device-bin)'); CPU $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)" |
  tee -a "$W/gpu.txt"
kl="$root/.device-bin/kernelab"
if [ -x "$kl" ] && ldd "$kl" > "$W/ldd.txt" 2>&1 && ! grep -q "not found" "$W/ldd.txt" && "$kl" list > "$W/list.txt" 2>&1; then
  echo "carried kernelab runs (libraries: $W/ldd.txt)"
else
  echo "the carried kernelab does not run here:"; grep "not found" "$W/ldd.txt" 2>/dev/null; tail -3 "$W/list.txt" 2>/dev/null
  build_there() {  # kernelab alone, sm_90a alone, with the carried Debian packages (scripts/device-deps.sh)
    local prefix=/tmp/kernelab-deps
    for f in .device-deps/*.deb; do dpkg -x "$f" "$prefix"; done
    export CMAKE_PREFIX_PATH="$prefix/usr" CPATH="$prefix/usr/include"
    export LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu" LD_LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu:$LD_LIBRARY_PATH"
    cmake -S . -B build-device -G Ninja -DCMAKE_BUILD_TYPE=Release \
      "-DKERNELAB_CUDA_GENCODE=-gencode=arch=compute_90a,code=sm_90a" && cmake --build build-device --target kernelab -j "$(nproc)"
  }
  export -f build_there
  step "build kernelab there" 300 bash -c build_there > "$W/build.txt" 2>&1 || { tail -20 "$W/build.txt"; pack; exit 1; }
  kl="$root/build-device/kernelab"
fi
pack

# OpenMPI's mpirun, for the NCCL transport and the CPU collectives: the image's, else the carried
# Debian packages unpacked and relocated (OPAL_PREFIX; tried here with the system's copy hidden).
if ! command -v mpirun >/dev/null && ls .device-deps/openmpi-bin_*.deb >/dev/null 2>&1; then
  ompi=/tmp/kernelab-ompi
  for f in .device-deps/openmpi-*.deb .device-deps/lib{openmpi3,pmix2,hwloc15,event-core,event-pthreads}*.deb; do dpkg -x "$f" "$ompi"; done
  ln -sf orterun "$ompi/usr/bin/mpirun"
  export OPAL_PREFIX="$ompi/usr" OPAL_SYSCONFDIR="$ompi/etc/openmpi" PMIX_INSTALL_PREFIX="$ompi/usr/lib/x86_64-linux-gnu/pmix2"
  export PATH="$ompi/usr/bin:$PATH"
  export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$ompi/usr/lib/x86_64-linux-gnu:$ompi/usr/lib/x86_64-linux-gnu/openmpi/lib:$ompi/usr/lib/x86_64-linux-gnu/pmix2/lib"
fi
echo "mpirun: $(command -v mpirun || echo 'none: the NCCL and CPU collectives steps will say so')"

run_sim_programs() {  # the tests/sim programs, then the planted bugs under compute-sanitizer
  mkdir -p "$W/sim-programs"
  local sanitizer; sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  local failed=0 p
  for p in ptx_wrappers wmma_gemm wgmma_layouts hopper_gemm wgmma_fp8 wgmma_s8 libcudacxx_async matmul_tiled reduce_warp histogram \
           graph_replay streams_events device_query access_patterns early_exit shuffle_exited_source cublaslt_fp8_block; do
    if timeout --foreground 30 ".device-bin/sim/$p" > "$W/sim-programs/$p.txt" 2>&1; then echo "ok    $p"; else echo "FAIL  $p (exit $?)"; failed=1; fi
  done
  grep -h "accumulation" "$W/sim-programs/wgmma_fp8.txt"  # the hardware's bits and rounding (an H200: 14, toward zero, as src/sim/hopper_fp8.h models)
  cat "$W/sim-programs/cublaslt_fp8_block.txt"  # which block-scaled formulations cuBLASLt takes, and whether D is right
  local shape  # and at shapes of the peer's check sweep (m 1 and 7, n 48 and 272), and a larger one
  for shape in "1 48 128" "7 272 384" "512 512 512"; do
    echo "cublaslt_fp8_block $shape:"; timeout --foreground 30 .device-bin/sim/cublaslt_fp8_block $shape || echo "exit $?"
  done
  [ -n "$sanitizer" ] || { echo "compute-sanitizer not found"; return 1; }
  # The simulator's checkers (sim run --race-check / --memcheck) catch each of these; compute-sanitizer should too.
  local planted=("racecheck race" "memcheck oob global" "memcheck oob shared" "memcheck oob freed" "memcheck misaligned 1")
  local c
  for c in "${planted[@]}"; do
    set -- $c
    local tool=$1 name="$2${3:+-$3}"; shift
    timeout --foreground 60 "$sanitizer" --tool "$tool" --error-exitcode 99 ".device-bin/sim/$1" "${@:2}" > "$W/sim-programs/$name.$tool.txt" 2>&1
    local rc=$?
    echo "$([ $rc = 99 ] && echo found || echo "MISSED (exit $rc)") $name under $tool: $(grep -m1 -E '^=+ +(Error|Warning|Invalid|Race)' "$W/sim-programs/$name.$tool.txt")"
  done
  return $failed
}

gemm_headline() {  # every rung in one bench call per shape; the shapes a reader asks about first
  mkdir -p "$W/gemm"
  local s nk m
  b() { echo "-- gemm $1"; local n=$1; shift; timeout --foreground 40 "$kl" bench gemm --backend cuda "$@" --max-seconds 0.2 --json > "$W/gemm/$n.json" || echo "gemm $n failed"; }
  b square-bf16-4096 --m 4096 --n 4096 --k 4096 --dtype bf16
  b square-bf16-bcol-4096 --m 4096 --n 4096 --k 4096 --dtype bf16 --b-layout col
  for m in 1 16 128 4096; do b "llm-bf16-m$m-n4096-k4096" --m $m --n 4096 --k 4096 --dtype bf16 --b-layout col; done
  for m in 1 16; do b "llm-bf16-brow-m$m-n4096-k4096" --m $m --n 4096 --k 4096 --dtype bf16; done
  b square-fp32-4096 --m 4096 --n 4096 --k 4096 --dtype fp32
  for nk in 14336x4096 4096x14336; do
    for m in 1 16 4096; do b "llm-bf16-m$m-n${nk%x*}-k${nk#*x}" --m $m --n "${nk%x*}" --k "${nk#*x}" --dtype bf16 --b-layout col; done
  done
  b square-bf16-2048 --m 2048 --n 2048 --k 2048 --dtype bf16
  b square-bf16-bcol-8192 --m 8192 --n 8192 --k 8192 --dtype bf16 --b-layout col --variant cuda_cp_async cuda_tma_wgmma cuda_warp_specialized cublaslt
}

attention_headline() {
  mkdir -p "$W/attention"
  local fast="cuda_flash2_mma cuda_hopper_wgmma cudnn_sdpa"
  a() { echo "-- $2 $1"; local n=$1 op=$2; shift 2; timeout --foreground 60 "$kl" bench "$op" --backend cuda "$@" --max-seconds 0.2 --json > "$W/attention/$n.json" || echo "$op $n failed"; }
  # Shapes whose float64 reference (computed on the host for every bench call) takes seconds: the
  # first call's batch 16 x 16 heads x 1024 took past 40 s there.
  for c in 0 1; do
    a "fwd-d128-s1024-c$c" attention --batch 2 --heads 16 --kv-heads 16 --seq-q 1024 --seq-kv 1024 --head-dim 128 --causal $c --dtype bf16
  done
  a "bwd-d128-s1024-c1" attention_bwd --batch 2 --heads 16 --kv-heads 16 --seq-q 1024 --seq-kv 1024 --head-dim 128 --causal 1 --dtype bf16
  a "decode-b8-ctx8192-p16" decode --batch 8 --seq-q 1 --seq-kv 8192 --heads 64 --kv-heads 8 --head-dim 128 --page-size 16 --dtype bf16
  a "fwd-gqa-d128-s2048-c1" attention --batch 1 --heads 32 --kv-heads 8 --seq-q 2048 --seq-kv 2048 --head-dim 128 --causal 1 --dtype bf16 --variant $fast
  a "fwd-d64-s2048-c0" attention --batch 1 --heads 16 --kv-heads 16 --seq-q 2048 --seq-kv 2048 --head-dim 64 --causal 0 --dtype bf16 --variant $fast
  a "decode-b1-ctx65536-p16" decode --batch 1 --seq-q 1 --seq-kv 65536 --heads 64 --kv-heads 8 --head-dim 128 --page-size 16 --dtype bf16
  for s in 128 512; do a "short-s$s" attention --batch 4 --heads 16 --kv-heads 16 --seq-q $s --seq-kv $s --head-dim 128 --dtype bf16; done
}

quant_headline() {  # issue 15's shapes: W4A16 at m 1-512 on 4096 x 4096, 14336 x 4096 and 4096 x 14336 against cuBLASLt fp16
  mkdir -p "$W/quant"
  # The host's float64 references and the weights' quantization take most of a point's time at these
  # sizes (an H200 window's 14336 sweeps and 8192^3 int8 bench passed 60 s each), hence the long timeouts.
  q() { echo "-- $2 $1"; local n=$1 op=$2; shift 2; timeout --foreground 90 "$kl" bench "$op" --backend cuda "$@" --max-seconds 0.2 --json > "$W/quant/$n.json" || echo "$op $n failed"; }
  w() {
    echo "-- gemm_w4a16 sweep n$1-k$2"
    timeout --foreground 150 "$kl" sweep gemm_w4a16 --backend cuda --dtype fp16 --axis m=1,16,64,128,512 --against gemm --n "$1" --k "$2" \
      --max-seconds 0.1 --json > "$W/quant/n$1-k$2.sweep" || echo "w4a16 sweep n$1-k$2 failed"
  }
  w 4096 4096
  q w8a8-4096 gemm_w8a8 --m 4096 --n 4096 --k 4096 --dtype bf16
  q fp8-tensor-4096 gemm_fp8 --m 4096 --n 4096 --k 4096 --dtype bf16 --scaling tensor
  q fp8-block-4096 gemm_fp8 --m 4096 --n 4096 --k 4096 --dtype bf16 --scaling block
  w 14336 4096
  w 4096 14336
  q w8a8-8192 gemm_w8a8 --m 8192 --n 8192 --k 8192 --dtype bf16
  q fp8-block-8192 gemm_fp8 --m 8192 --n 8192 --k 8192 --dtype bf16 --scaling block
}

ncu_compare() {  # the simulator's ncu-named counts (sim profile) beside ncu's on the same problem
  mkdir -p "$W/ncu"
  local ncu; ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  [ -n "$ncu" ] || { echo "ncu not found: the simulator-against-ncu table is skipped" | tee "$W/ncu/skipped.txt"; return 1; }
  echo "ncu: $ncu ($("$ncu" --version 2>/dev/null | tail -1))"
  timeout --foreground 60 "$ncu" --query-metrics > "$W/ncu/query-metrics.txt" 2>&1 || echo "ncu --query-metrics failed: requesting every metric"
  local metrics; metrics=$(python3 scripts/ncu_compare.py --metrics-list --available "$W/ncu/query-metrics.txt")
  local units=""; "$ncu" --help 2>/dev/null | grep -q -- --print-units && units="--print-units base"
  local p op shape
  # scripts/ncu-problems.txt: one problem per line, each profiled in the simulator here by device-prepare.sh.
  while read -r p; do
    op=${p%% *} shape=${p#* }
    echo "-- $op $shape"
    if [ -s ".device-bin/ncu-sim/$op.sim.json" ]; then cp ".device-bin/ncu-sim/$op.sim.json" "$W/ncu/"
    else timeout --foreground 120 "$kl" sim profile "$op" $shape --json > "$W/ncu/$op.sim.json" < /dev/null || { echo "sim profile $op failed"; continue; }; fi
    timeout --foreground 120 "$ncu" --clock-control none --metrics "$metrics" $units --csv --page raw "$kl" check "$op" $shape --backend cuda \
      < /dev/null > "$W/ncu/$op.ncu.csv" 2> "$W/ncu/$op.ncu.err" || { echo "ncu $op failed"; tail -3 "$W/ncu/$op.ncu.err"; }
    python3 scripts/ncu_compare.py "$W/ncu/$op.sim.json" "$W/ncu/$op.ncu.csv" | tee "$W/ncu/$op.txt"
  done < scripts/ncu-problems.txt
}

tune_profiles() {  # ncu's sections for the rungs under issue 15's targets, beside the library kernel they chase
  mkdir -p "$W/tune"
  local ncu; ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  [ -n "$ncu" ] || { echo "ncu not found"; return 1; }
  n() {
    local name=$1 regex=$2; shift 2
    echo "-- $name"
    timeout --foreground 60 "$ncu" --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis \
      --section Occupancy --section WarpStateStats --section SchedulerStats --section LaunchStats --section ComputeWorkloadAnalysis \
      -k "regex:$regex" -c 4 "$kl" check "$@" --backend cuda < /dev/null > "$W/tune/$name.txt" 2>&1 || echo "ncu $name failed"
    grep -E "^  [a-zA-Z_].*\(|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Compute \(SM\) Throughput" \
      "$W/tune/$name.txt" | head -40
  }
  # The rungs no GPU has run yet first (the step's budget may not reach the last).
  n gemv-m1-n4096 "w4a16" gemm_w4a16 --m 1 --n 4096 --k 4096 --dtype fp16 --variant cuda_decode_gemv
  n int8-4096 "w8a8_mma|w8a8_tma|nvjet|sm90|xmma|cutlass|gemm" gemm_w8a8 --m 4096 --n 4096 --k 4096 --dtype bf16 \
    --variant cuda_mma_s8,cuda_tma_wgmma_s8,cublaslt_int8
  n fp8-4096 "tma_wgmma|nvjet|sm90|xmma|cutlass|gemm" gemm_fp8 --m 4096 --n 4096 --k 4096 --dtype bf16 --scaling block \
    --variant cuda_tma_wgmma_fp8,cublaslt_fp8
  n gemv-m16-n14336 "w4a16" gemm_w4a16 --m 16 --n 14336 --k 4096 --dtype fp16 --variant cuda_decode_gemv
  n gemm-m1-n4096 "." gemm --m 1 --n 4096 --k 4096 --dtype fp16 --b-layout col --variant cublaslt
  n w4a16-m1-n4096 "w4a16" gemm_w4a16 --m 1 --n 4096 --k 4096 --dtype fp16 --variant cuda_fragment_lop3
  n w4a16-m16-n14336 "w4a16" gemm_w4a16 --m 16 --n 14336 --k 4096 --dtype fp16 --variant cuda_fragment_lop3
}

racecheck_rungs() {  # compute-sanitizer racecheck over the shared-memory rungs on one small shape each
  mkdir -p "$W/sanitizer"
  local sanitizer; sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  [ -n "$sanitizer" ] || { echo "compute-sanitizer not found"; return 1; }
  local failed=0 p op
  for p in "softmax --rows 64 --cols 1000 --dtype fp32" "reduce --rows 64 --cols 1000 --dtype fp32" \
           "transpose --rows 65 --cols 130 --dtype fp32" "gemm --m 129 --n 136 --k 72 --dtype bf16" \
           "attention --batch 1 --heads 2 --kv-heads 1 --seq-q 130 --seq-kv 130 --head-dim 64 --causal 1 --dtype bf16" \
           "attention_bwd --batch 1 --heads 2 --kv-heads 2 --seq-q 130 --seq-kv 130 --head-dim 64 --causal 1 --dtype bf16" \
           "gemm_w4a16 --m 16 --n 256 --k 256 --dtype fp16" "decode --batch 2 --seq-q 1 --seq-kv 1000 --heads 8 --kv-heads 2 --head-dim 128 --dtype bf16"; do
    op=${p%% *}
    timeout --foreground 90 "$sanitizer" --tool racecheck --error-exitcode 99 "$kl" check $p --backend cuda > "$W/sanitizer/$op.txt" 2>&1
    local rc=$?
    echo "racecheck $op: exit $rc, $(grep -m1 -E 'RACECHECK SUMMARY|hazard' "$W/sanitizer/$op.txt")"
    [ $rc = 0 ] || failed=1
  done
  return $failed
}

big_ladders() {
  mkdir -p "$W/big"
  local op
  for op in softmax layernorm rmsnorm reduce transpose; do
    timeout --foreground 20 "$kl" bench "$op" --backend cuda --rows 16384 --cols 4096 --dtype fp32 --max-seconds 0.3 --json > "$W/big/$op.json" || echo "big $op failed"
  done
}

cupti_trace() {
  "$kl" bench softmax --backend cuda --rows 4096 --cols 4096 --max-seconds 0.1 --trace "$W/trace.json" >/dev/null &&
    "$kl" trace analyze "$W/trace.json" --json > "$W/trace-analysis.json" && gzip -f "$W/trace.json"
}

nccl_check() {  # issue 16: the own algorithms on the NCCL transport beside NCCL's collectives, ranks sharing the GPU
  mkdir -p "$W/nccl"
  command -v mpirun >/dev/null || { echo "no mpirun on this machine: the NCCL transport was not run"; return 0; }
  python3 -c 'import nvidia.nccl, importlib.metadata as m; print("NCCL (pip):", m.version("nvidia-nccl-cu13"))' 2>/dev/null
  # The image's NCCL (2.28.9 so far) refuses two ranks on one GPU: the carried 2.30 goes first.
  local nccl_lib="$root/.device-bin/nccl" r
  [ -f "$nccl_lib/libnccl.so.2" ] || { echo "no carried NCCL 2.30 (.device-bin/nccl): the image's is used"; nccl_lib=""; }
  for r in 2 3; do  # NCCL 2.30+ puts several ranks on one GPU only when asked
    LD_LIBRARY_PATH="${nccl_lib:+$nccl_lib:}$LD_LIBRARY_PATH" NCCL_MULTI_RANK_GPU_ENABLE=1 timeout --foreground 90 \
      "$kl" comm check --transport nccl --ranks $r --timeout 60 --json \
      > "$W/nccl/check-${r}ranks.json" 2> "$W/nccl/check-${r}ranks.err" &&
      echo "nccl check, $r ranks: passed ($(grep -m1 -o 'NCCL [0-9.]*' "$W/nccl/check-${r}ranks.err"))" ||
      echo "nccl check, $r ranks FAILED: $(grep -m1 "^kernelab: " "$W/nccl/check-${r}ranks.err" || tail -3 "$W/nccl/check-${r}ranks.err")"
  done
  # nccl-tests' table on the NCCL transport: the bandwidth of the one GPU's memory, which the ranks share
  LD_LIBRARY_PATH="${nccl_lib:+$nccl_lib:}$LD_LIBRARY_PATH" timeout --foreground 60 "$kl" comm bench allreduce --transport nccl \
    --ranks 2 -b 8 -e 256M -f 4 --timeout 50 > "$W/nccl/bench-allreduce-2ranks.txt" 2>&1 &&
    echo "nccl bench, 2 ranks: $(grep -c 'Avg bus bandwidth' "$W/nccl/bench-allreduce-2ranks.txt") tables" ||
    echo "nccl bench, 2 ranks FAILED: $(grep -m1 "^kernelab: " "$W/nccl/bench-allreduce-2ranks.txt" || tail -3 "$W/nccl/bench-allreduce-2ranks.txt")"
}

fused_peers() {  # issue 17: the generated kernels at a 256 MiB working set beside PyTorch eager and torch.compile
  mkdir -p "$W/fused"
  local e
  for e in softmax_causal layernorm rmsnorm_residual bias_gelu swiglu; do
    # NVRTC cold, then warm (the cache's read), into a cache of this run's own
    KERNELAB_JIT_CACHE="$W/fused/jit" "$kl" fuse $e --compile-only --arch sm_90 --json > /dev/null 2>&1
    KERNELAB_JIT_CACHE="$W/fused/jit" "$kl" fuse $e --compile-only --arch sm_90 --json > "$W/fused/$e-nvrtc.json" 2>&1
    timeout --foreground 30 "$kl" bench fused --backend cuda --expr $e --rows 8192 --cols 8192 --dtype bf16 --max-seconds 0.3 --json \
      > "$W/fused/$e.json" || echo "fused $e failed"
  done
  timeout --foreground 60 python3 scripts/fused_torch_peer.py 8192 8192 bf16 "$W/fused" "$W/probe.json" "$W/fused/peers.json"
}

comm_cpu() {  # issue 16: the CPU collectives with a core per rank (this VM has 2 cores; that host 16)
  command -v mpirun >/dev/null || { echo "no mpirun on this machine: the CPU collectives were not run"; return 0; }
  local ranks=$(( $(nproc) / 2 )); [ $ranks -gt 8 ] && ranks=8
  RANKS=$ranks ROUNDS=1 LARGEST=128M KERNELAB="$kl" KERNELAB_COMMIT="$(cat .device-bin/commit 2>/dev/null || echo unknown)" \
    COMM_OUT="$W/comm-cpu-${ranks}ranks.json" bash scripts/comm-bench-cpu.sh
}

checks_per_op() {  # one process per op, so a kernel that hangs costs its op alone
  mkdir -p "$W/check"
  local op failed=0
  for op in ${KERNELAB_CHECK_OPS:-$(awk '/^[a-z_0-9]+:/ {sub(":", "", $1); print $1}' "$W/list.txt")}; do
    timeout --foreground 45 "$kl" check "$op" --backend cuda > "$W/check/$op.txt" 2>&1
    local rc=$?
    [ $rc = 0 ] || { failed=1; echo "$op: exit $rc$([ $rc = 124 ] && echo ', stopped at 45 s')"; }
    tail -1 "$W/check/$op.txt" | sed "s/^/$op: /"
  done
  return $failed
}

cpu_ladders() {  # issue 18 on the host's x86 kind, in the file format of bench/results/cpu/ (commit it there)
  LEVELS=best RUNGS=best DTYPES="fp32 bf16" GEMM_SIZES="1024 4096" OUT_ROOT="$W/cpu" KERNELAB="$kl" \
    KERNELAB_COMMIT="$(cat .device-bin/commit 2>/dev/null || echo unknown)" bash scripts/cpu-bandwidth-check.sh
}

export -f fused_peers comm_cpu nccl_check tune_profiles cpu_ladders run_sim_programs gemm_headline attention_headline quant_headline ncu_compare racecheck_rungs big_ladders cupti_trace checks_per_op
export kl W root

# Steps by name: all by default, or those named on the command line (a second call in one window).
wanted=" ${*:-sim probe check quant tune gemm attention fused big ncu racecheck trace nccl commcpu sweeps cpu report} "
want() { [[ "$wanted" == *" $1 "* ]]; }
want sim && step "tests/sim programs on the chip; the planted bugs under compute-sanitizer" 60 bash -c run_sim_programs
want probe && step "probe: copy bandwidth and cuBLASLt rates" 60 bash -c '"$kl" probe --gpu --json > "$W/probe.json"'
want check && step "every CUDA variant against the float64 reference, op by op" 150 bash -c checks_per_op
want quant && step "quantized GEMMs: W4A16 over M against gemm; int8 and fp8 against cuBLASLt" 360 bash -c quant_headline
want tune && step "ncu sections of the quantized rungs under their targets, beside cuBLASLt" 90 bash -c tune_profiles
want gemm && step "gemm ladder, headline shapes" 70 bash -c gemm_headline
want attention && step "attention ladder, headline shapes" 150 bash -c attention_headline
want fused && step "fused op: generated kernels beside PyTorch eager and torch.compile (256 MiB working sets)" 100 bash -c fused_peers
want big && step "memory-bound ladders on 256 MiB working sets" 40 bash -c big_ladders
want ncu && step "simulator profiler against ncu" 70 bash -c ncu_compare
want racecheck && step "racecheck over the shared-memory rungs" 50 bash -c racecheck_rungs
want trace && step "a CUPTI trace, analysed" 20 bash -c cupti_trace
want nccl && step "comm check and bench --transport nccl: 2 and 3 ranks on the one GPU (NCCL_MULTI_RANK_GPU_ENABLE)" 90 bash -c nccl_check
want commcpu && step "CPU collectives with a core per rank: own ring and tree beside MPI at 64-256 MiB" 60 bash -c comm_cpu
want sweeps && step "experiment sweeps" 60 bash scripts/experiment-sweeps.sh "$kl" cuda "$W/sweeps"
want cpu && step "CPU ladders on this host's CPU (issue 18 on another x86 kind: probe, each op's best rung in fp32 and bf16, gemm against OpenBLAS)" 75 bash -c cpu_ladders
want report && step "report --backend cuda (the checks again, one point per variant at the report's shapes)" 200 \
  "$kl" report --backend cuda --max-seconds 0.1 --out "$W/report"

echo; echo "== summary ($(elapsed) s)"
{
  cat "$W/gpu.txt"
  python3 scripts/device_summary.py "$W" 2>&1
  [ -d "$W/gemm" ] && python3 scripts/gemm_summary.py "$W/gemm" 2>&1
  [ -d "$W/attention" ] && python3 scripts/attention_summary.py "$W/attention" "$W/probe.json" 2>&1
  [ -d "$W/quant" ] && python3 scripts/quant_summary.py "$W/quant" 2>&1
  for s in "${skipped[@]}"; do echo "skipped: $s"; done
  for f in "${failures[@]}"; do echo "FAILED: $f"; done
} > "$OUT/summary.txt"
pack
cat "$OUT/summary.txt"
[ ${#failures[@]} -eq 0 ] || exit 1
echo "device-check: all steps passed in $(elapsed) s"
