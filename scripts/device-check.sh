#!/usr/bin/env bash
# The one command for a session with a lent GPU (see ../shared/device-runbook.md): builds for
# sm_90a, runs every test, checks every variant on the GPU, benchmarks the default suite, and
# writes results.json, gpu.txt and log.txt to $OUT (./out outside the device tool), with probe.json
# (the GPU's measured ceilings), big/ (the memory-bound ladders on 256 MB+ working sets), sweeps/
# (the execution-model and memory-hierarchy experiments), a CUPTI trace with its analysis, and ncu/
# (the simulator's memory counts beside Nsight Compute's, scripts/ncu_compare.py). On a machine
# without a GPU it does all it can (build, tests, CPU report and the CPU experiments) and says
# plainly that no GPU was found. KERNELAB_BUILD=DIR reuses a build folder (default build-device).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-./out}
mkdir -p "$OUT"
exec > >(tee "$OUT/log.txt") 2>&1
start=$(date +%s)
step() { echo; echo "== $* ($(( $(date +%s) - start )) s)"; }
status=()

step "machine"
gpu=0
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  gpu=1
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,power.limit,temperature.gpu \
    --format=csv | tee "$OUT/gpu.txt"
else
  echo "NO GPU FOUND: nvidia-smi is missing or lists no device; the CUDA checks and GPU benchmarks are skipped" | tee "$OUT/gpu.txt"
fi
echo "commit $(git describe --always --dirty --abbrev=12 2>/dev/null || echo unknown)" | tee -a "$OUT/gpu.txt"

# Build dependencies the GPU image lacks come as .debs carried in .device-deps (scripts/device-deps.sh).
if [ -d .device-deps ] && ls .device-deps/*.deb >/dev/null 2>&1; then
  step "unpacking carried build dependencies"
  prefix=/tmp/kernelab-deps
  for f in .device-deps/*.deb; do dpkg -x "$f" "$prefix"; done
  if ! command -v cuobjdump >/dev/null && ls .device-deps/nvidia_cuda_*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps .device-deps/nvidia_cuda_*.whl || status+=("cuobjdump wheels not installed")
  fi
  # cudnn-frontend's headers (the cuDNN peers), out of its wheel, where cmake/ops.cmake looks under CMAKE_PREFIX_PATH.
  for w in .device-deps/nvidia_cudnn_frontend-*.whl; do
    [ -f "$w" ] && python3 - "$w" "$prefix/usr" <<'PY'
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
z.extractall(sys.argv[2], [n for n in z.namelist() if n.startswith("include/")])
PY
  done
  export CMAKE_PREFIX_PATH="$prefix/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  export CPATH="$prefix/usr/include${CPATH:+:$CPATH}"
  export LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu${LIBRARY_PATH:+:$LIBRARY_PATH}"
  export LD_LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu:$prefix/usr/lib/x86_64-linux-gnu/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
elif [ "$gpu" = 0 ]; then
  bash scripts/install-deps.sh || status+=("install-deps failed")
fi
# The CUDA libraries may live in the Python packages of the image: report where.
python3 - <<'PY' 2>/dev/null || true
import glob, site
for d in site.getsitepackages():
    for lib in sorted(glob.glob(d + "/nvidia/*/lib")):
        print("CUDA library folder:", lib)
PY

step "build"
build=${KERNELAB_BUILD:-build-device}
gencode="-gencode=arch=compute_80,code=sm_80;-gencode=arch=compute_90a,code=[sm_90a,compute_90a]"
[ "$gpu" = 1 ] && gencode="-gencode=arch=compute_90a,code=[sm_90a,compute_90a]"  # only the chip at hand (its PTX kept for the static checks)
if cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKERNELAB_CUDA_GENCODE="$gencode" >/dev/null &&
   cmake --build "$build" -j "$(nproc)"; then
  echo "build ok"
else
  status+=("BUILD FAILED")
  echo "BUILD FAILED"; printf '%s\n' "${status[@]}"; exit 1
fi

step "tests"
(cd "$build" && ctest -j "$(nproc)" --output-on-failure 2>&1 | tail -15) || status+=("tests failed")

if [ "$gpu" = 1 ]; then
  step "every CUDA variant against the reference, on the GPU"
  "$build/kernelab" check --backend cuda || status+=("check --backend cuda failed")
fi

kl="$build/kernelab"
if [ "$gpu" = 1 ]; then
  step "probe: the GPU's copy bandwidth and cuBLASLt GEMM rates"
  "$kl" probe --gpu --json > "$OUT/probe.json" || status+=("probe failed")
fi

# On a GPU the report covers the cuda backend only: the CPU figures are committed already, the
# simulator ran in ctest, and the 8-minute budget is the GPU's.
step "report: the default suite ($([ "$gpu" = 1 ] && echo "cuda backend" || echo "every backend present"))"
"$kl" report --out "$OUT/report" $([ "$gpu" = 1 ] && echo "--backend cuda") || status+=("report failed")
[ -f "$OUT/report/results.json" ] && cp "$OUT/report/results.json" "$OUT/results.json"

backend=cpu; [ "$gpu" = 1 ] && backend=cuda
if [ "$gpu" = 1 ]; then
  step "memory-bound ladders on 256 MB+ working sets (16384 x 4096 fp32: 256 MiB in, 256 MiB out)"
  mkdir -p "$OUT/big"
  for op in softmax layernorm rmsnorm reduce transpose; do
    "$kl" bench "$op" --backend cuda --rows 16384 --cols 4096 --dtype fp32 --max-seconds 0.3 --json > "$OUT/big/$op.json" ||
      status+=("big $op failed")
  done
  # The simulator's twins against the hardware: these tests/sim programs check themselves against
  # host loops (the PTX fragment layouts, wmma, TMA + mbarrier + wgmma), so a pass here confirms
  # that what the simulator does is what the GPU does.
  step "tests/sim programs on the GPU (twins against the instructions)"
  mkdir -p "$OUT/sim-programs"
  for prog in ptx_wrappers wmma_gemm wgmma_layouts hopper_gemm libcudacxx_async matmul_tiled reduce_warp histogram; do
    nvcc -std=c++17 -arch=sm_90a -I src "tests/sim/$prog.cu" -o "$OUT/sim-programs/$prog" > "$OUT/sim-programs/$prog.build.txt" 2>&1 &&
      timeout 60 "$OUT/sim-programs/$prog" > "$OUT/sim-programs/$prog.txt" 2>&1 || status+=("tests/sim/$prog on the GPU failed")
    tail -2 "$OUT/sim-programs/$prog.txt" 2>/dev/null
    rm -f "$OUT/sim-programs/$prog"
  done
  step "gemm ladder: square and LLM shapes, every rung as % of cuBLAS(Lt)"
  bash scripts/gemm-bench.sh "$kl" "$OUT/gemm" "${KERNELAB_GEMM_BUDGET_S:-150}" || status+=("gemm bench failed")
  step "attention ladder: FlashAttention's shapes, Llama-3 GQA, decode; % of cuDNN and of the copy bandwidth"
  bash scripts/attention-bench.sh "$kl" "$OUT/attention" "${KERNELAB_ATTENTION_BUDGET_S:-150}" "$OUT/probe.json" ||
    status+=("attention bench failed")
  step "quantized GEMMs: W4A16 against the unquantized GEMM over M (the crossover); int8 and fp8 against cuBLASLt"
  bash scripts/quant-bench.sh "$kl" "$OUT/quant" "${KERNELAB_QUANT_BUDGET_S:-120}" || status+=("quant bench failed")
  step "a CUPTI trace of one ladder, analysed"
  "$kl" bench softmax --backend cuda --rows 4096 --cols 4096 --max-seconds 0.1 --trace "$OUT/trace.json" >/dev/null &&
    "$kl" trace analyze "$OUT/trace.json" --json > "$OUT/trace-analysis.json" || status+=("trace failed")

  # The simulator's ncu-named counts (sim profile) beside ncu's on the same problem, every CUDA rung
  # once per config (check with a shape): ncu/OP.{sim.json,ncu.csv,txt}. ncu's stderr in ncu/OP.ncu.err.
  step "sim profiler against ncu"
  mkdir -p "$OUT/ncu"
  ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  if [ -z "$ncu" ]; then
    echo "ncu not found (PATH, /usr/local/cuda*/bin, /opt/nvidia/nsight-compute/*): the simulator-against-ncu table is skipped" |
      tee "$OUT/ncu/skipped.txt"
  else
    echo "ncu: $ncu ($("$ncu" --version 2>/dev/null | tail -1))"
    # Only the metrics this ncu lists (an unknown metric makes ncu refuse the run); all if the query fails.
    timeout 60 "$ncu" --query-metrics > "$OUT/ncu/query-metrics.txt" 2>&1 || echo "ncu --query-metrics failed: requesting every metric"
    metrics=$(python3 scripts/ncu_compare.py --metrics-list --available "$OUT/ncu/query-metrics.txt")
    units=""; "$ncu" --help 2>/dev/null | grep -q -- --print-units && units="--print-units base"  # bytes as bytes, not Mbyte
    ncu_start=$(date +%s) ncu_budget=${KERNELAB_NCU_BUDGET_S:-240}
    for p in "transpose --rows 1024 --cols 1024 --dtype fp32" "exp_smem_banks --blocks 32 --stride 8 --reps 64" \
             "exp_stride --n 262144 --stride 8 --bytes 4" "exp_divergence --n 65536 --paths 4 --work 16" \
             "softmax --rows 1024 --cols 1024 --dtype fp32" "layernorm --rows 1024 --cols 1024 --dtype fp32" \
             "reduce --rows 1024 --cols 1024 --dtype fp32"; do
      op=${p%% *} shape=${p#* }
      if [ $(( $(date +%s) - ncu_start )) -ge "$ncu_budget" ]; then
        echo "ncu step: its ${ncu_budget} s are spent; skipping $op and the rest"; break
      fi
      echo "-- $op $shape"
      timeout 120 "$kl" sim profile "$op" $shape --json > "$OUT/ncu/$op.sim.json" ||
        { status+=("sim profile $op failed"); continue; }
      timeout 120 "$ncu" --metrics "$metrics" $units --csv --page raw "$kl" check "$op" $shape --backend cuda \
        > "$OUT/ncu/$op.ncu.csv" 2> "$OUT/ncu/$op.ncu.err" ||
        { status+=("ncu $op failed"); tail -3 "$OUT/ncu/$op.ncu.err"; }
      python3 scripts/ncu_compare.py "$OUT/ncu/$op.sim.json" "$OUT/ncu/$op.ncu.csv" | tee "$OUT/ncu/$op.txt" ||
        status+=("ncu compare $op failed")
    done
  fi
fi

step "experiments: sweeps on $backend"
bash scripts/experiment-sweeps.sh "$kl" "$backend" "$OUT/sweeps" || status+=("experiment sweeps failed")

step "summary"
[ "$gpu" = 1 ] || echo "no GPU was found: this run verified the build, the tests and the CPU figures only"
python3 scripts/device_summary.py "$OUT" || true
if [ ${#status[@]} -gt 0 ]; then printf 'FAILED: %s\n' "${status[@]}"; exit 1; fi
echo "device-check: all steps passed in $(( $(date +%s) - start )) s"
