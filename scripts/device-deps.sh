#!/usr/bin/env bash
# Run here, before a device call: downloads the Debian packages kernelab builds against that the
# GPU machine's image lacks (it has nvcc, CMake and ninja, and no registry access) into
# .device-deps/, which the device call carries and scripts/device-check.sh unpacks: OpenMPI's
# launcher for the collectives steps, and the libraries for building kernelab there should the
# carried binary not run. About 16 MB, beside scripts/device-prepare.sh's archive within the
# call's 64 MiB.
set -euo pipefail
cd "$(dirname "$0")/.."
pkgs=(libgtest-dev libfmt-dev libfmt9 libcli11-dev nlohmann-json3-dev libopenblas-dev libopenblas0
      libopenblas-pthread-dev libopenblas0-pthread libgfortran5 libsimdjson-dev libsimdjson14
      # OpenMPI's launcher, relocated there (device-check.sh: OPAL_PREFIX) when the image has no mpirun
      openmpi-bin openmpi-common libopenmpi3 libpmix2 libhwloc15 libevent-core-2.1-7 libevent-pthreads-2.1-7)
mkdir -p .device-deps
grep -qx '/.device-deps/' .git/info/exclude 2>/dev/null || echo '/.device-deps/' >> .git/info/exclude
cd .device-deps
apt-get download "${pkgs[@]}"
ls -1 ./*.deb
