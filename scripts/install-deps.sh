#!/usr/bin/env bash
# Installs what kernelab needs to build and test, only what is missing (a second run is quick).
set -euo pipefail
debs=(cmake ninja-build g++ make pkg-config libgtest-dev libbenchmark-dev libopenblas-dev
      libopenblas-openmp-dev libfmt-dev libcli11-dev nlohmann-json3-dev libsimdjson-dev zlib1g-dev libomp-dev
      libboost-context-dev clang libclang-rt-dev openmpi-bin libopenmpi-dev)
missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# cuobjdump and the nvdisasm it runs, for the CUDA static checks (the toolkit here lacks them):
# PyPI's NVIDIA packages, found by cmake/ops.cmake under the Python site-packages.
if command -v nvcc >/dev/null && ! command -v cuobjdump >/dev/null; then
  bin=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/nvidia/cu13/bin
  if [ ! -x "$bin/cuobjdump" ] || [ ! -x "$bin/nvdisasm" ]; then
    echo "install-deps: installing nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm (pip)"
    python3 -m pip install -q --disable-pip-version-check nvidia-cuda-cuobjdump==13.* nvidia-cuda-nvdisasm==13.* 2>&1 |
      grep -v "Running pip as the 'root' user" || true
  fi
fi
# cudnn-frontend's headers (header-only C++) for the cuDNN SDPA peers, found by cmake/ops.cmake under
# site-packages/include. --no-deps: its Python dependencies (CUTLASS's DSL) are not needed for them.
if command -v nvcc >/dev/null; then
  include=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/include
  if [ ! -f "$include/cudnn_frontend.h" ]; then
    echo "install-deps: installing nvidia-cudnn-frontend (pip, headers only)"
    python3 -m pip install -q --disable-pip-version-check --no-deps nvidia-cudnn-frontend==1.32.* 2>&1 |
      grep -v "Running pip as the 'root' user" || true
  fi
fi
