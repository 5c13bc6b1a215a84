#!/usr/bin/env bash
# Installs what kernelab needs to build and test, only what is missing (a second run is quick).
set -euo pipefail
debs=(cmake ninja-build g++ make pkg-config libgtest-dev libbenchmark-dev libopenblas-dev
      libopenblas-openmp-dev libfmt-dev libcli11-dev nlohmann-json3-dev libsimdjson-dev zlib1g-dev libomp-dev
      libboost-context-dev clang libclang-rt-dev)
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
