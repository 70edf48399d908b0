#!/usr/bin/env bash
# The long soak: BRAID_SOAK_CALLS randomized collectives (default 100,000) in each soak test (3 shm
# processes; 2 TCP processes; worlds of 2-5 ranks drawn with their transport), every result checked (exactly, or
# against a float64 reference for random floating-point inputs) and resident memory watched
# (tests/multirank/soak_test.cpp; CI runs 1,000 + 1,000 + 400).
#
#   scripts/soak.sh [CALLS]      BRAID_BUILD_DIR (default build) holds tests/braid_multirank_tests
set -euo pipefail
cd "$(dirname "$0")/.."
calls=${1:-100000}
bin=${BRAID_BUILD_DIR:-build}/tests/braid_multirank_tests
[[ -x $bin ]] || { echo "soak: no $bin (build first)" >&2; exit 1; }
start=$(date +%s)
BRAID_SOAK_CALLS=$calls "$bin" --gtest_filter='Soak.*'
echo "soak: $calls calls in each of the three soak tests, $(($(date +%s) - start)) s"
