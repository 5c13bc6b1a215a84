#!/usr/bin/env bash
# Run here, before a device call: builds what scripts/device-check.sh runs on the lent GPU so the
# GPU's minutes go to running, not compiling. Writes .device-bin/, packed as .device-bin.tar.xz
# (ignored; the device call carries the archive and device-check.sh unpacks it):
#   kernelab      the CLI for sm_90a only (its CPU rungs pick their x86 level at run time)
#   lib/          the shared libraries it needs that the GPU image may lack (MPI, OpenBLAS, fmt,
#                 simdjson, boost, cudart, CUPTI); glibc, libstdc++, cuBLAS, cuDNN are the image's
#   sim/          tests/sim programs built for sm_90a (the simulator's twins run on the real chip)
#   nccl/         PyPI's NCCL 2.30.7 cut to its sm_90 code, for the NCCL step: the image's 2.28.9
#                 refuses two ranks on its one GPU (comm/nccl_shared_gpu.h)
#   commit        the commit the binaries were built from
# KERNELAB_PREP_BUILD=DIR picks the build folder (default build-device).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${KERNELAB_PREP_BUILD:-build-device}
gencode="-gencode=arch=compute_90a,code=sm_90a"
launchers=()
command -v ccache >/dev/null && launchers=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "-DKERNELAB_CUDA_GENCODE=$gencode" \
  "${launchers[@]}" >/dev/null
cmake --build "$build" --target kernelab -j "$(nproc)"

bin=.device-bin
rm -rf "$bin"
mkdir -p "$bin/lib" "$bin/sim"
grep -qx '/.device-bin/' .gitignore || echo '/.device-bin/' >> .gitignore
strip -o "$bin/kernelab" "$build/kernelab"
git describe --always --dirty --abbrev=12 > "$bin/commit"
# Every library ldd resolves, except the C runtime (the image's is newer) and the big CUDA
# libraries the image carries itself (its PyTorch's nvidia/*/lib).
ldd "$build/kernelab" | awk '$3 ~ /^\// {print $3}' | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|libutil.so*|libstdc++.so*|libgcc_s.so*|libnccl.so*) ;;
    *) cp -L "$lib" "$bin/lib/" ;;
  esac
done

# The tests/sim programs that check themselves against host loops (the PTX fragment layouts, wmma,
# TMA + mbarrier + wgmma, the runtime calls), and the planted bugs (race, oob,
# misaligned) that compute-sanitizer should find as the simulator does.
progs=(ptx_wrappers wmma_gemm wgmma_layouts hopper_gemm wgmma_fp8 wgmma_s8 libcudacxx_async matmul_tiled reduce_warp
       histogram graph_replay streams_events device_query access_patterns early_exit shuffle_exited_source
       race oob misaligned)
mkdir -p "$build/sim-programs"
for p in "${progs[@]}"; do
  exe="$build/sim-programs/$p"
  # Rebuilt when it or the PTX wrappers it includes (src/cuda) changed since.
  [ -f "$exe" ] && [ -z "$(find "tests/sim/$p.cu" src/cuda -newer "$exe" -print -quit)" ] || nvcc -std=c++17 -O2 "$gencode" -I src "tests/sim/$p.cu" -o "$exe"
  cp "$exe" "$bin/sim/"
done
# cuBLASLt's block-scaled fp8 GEMM in the gemm_fp8 peer's three formulations: linked, as it calls the library.
nvcc -std=c++17 -O2 "$gencode" -I src tests/sim/cublaslt_fp8_block.cu -lcublasLt -o "$bin/sim/cublaslt_fp8_block"
# The simulator's side of the simulator-against-ncu table, computed here where it costs no GPU time.
mkdir -p "$bin/ncu-sim"
while read -r p; do
  "$build/kernelab" sim profile $p --json > "$bin/ncu-sim/${p%% *}.sim.json" < /dev/null
done < scripts/ncu-problems.txt
# PyPI's libnccl.so.2 holds cubins for sm_75 to sm_120 (200 MB by xz); with each fatbin cut to its
# sm_90 cubins in place (scripts/fatbin-keep-arch.py) it is 21 MB. Here cuobjdump lists its 28
# sm_90 cubins, byte for byte the original's, and its host functions run (ncclGetVersion 23007,
# ncclGetUniqueId); its kernels only a GPU can run.
nccl=2.30.7
wheel="$build/nccl-$nccl"
[ -f "$wheel/nvidia/nccl/lib/libnccl.so.2" ] || {
  python3 -m pip download -q --no-deps "nvidia-nccl-cu13==$nccl" -d "$wheel"
  python3 -m zipfile -e "$wheel"/nvidia_nccl_cu13-*.whl "$wheel" && rm "$wheel"/nvidia_nccl_cu13-*.whl
}
mkdir -p "$bin/nccl"
python3 scripts/fatbin-keep-arch.py "$wheel/nvidia/nccl/lib/libnccl.so.2" "$bin/nccl/libnccl.so.2" 90 --empty-section __nv_relfatbin
# Packed, since the call carries 64 MiB at most (the binary and OpenBLAS alone are more).
tar cf - "$bin" | xz -T0 -6 > "$bin.tar.xz"
grep -qx '/.device-bin.tar.xz' .gitignore || echo '/.device-bin.tar.xz' >> .gitignore
du -sh "$bin.tar.xz" "$bin"/*
# What the call carries: this archive, .device-deps (scripts/device-deps.sh) and the working tree.
carried=$(( $(stat -c %s "$bin.tar.xz") + $( [ -d .device-deps ] && du -sb .device-deps | cut -f1 || echo 0) + $(git ls-files -z | du -cb --files0-from=- | tail -1 | cut -f1) ))
echo "the device call carries $((carried >> 20)) MiB of its 64 (.device-bin.tar.xz, .device-deps, the tracked files)"
[ "$carried" -lt $((64 << 20)) ] || { echo "device-prepare: over the call's 64 MiB"; exit 1; }
