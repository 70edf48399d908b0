#!/usr/bin/env bash
# Configures and builds braid into ${BRAID_BUILD_DIR:-build}. CUDA sources compile when nvcc is found
# (in PATH or /usr/local/cuda); pass extra CMake arguments through.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BRAID_BUILD_DIR:-build}
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$build" -j "$(nproc)"
