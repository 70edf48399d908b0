#!/usr/bin/env bash
# The whole collective x dtype x op x size matrix over forked processes and shared memory, world sizes 1-8
# (the CI runs it over threads and a sample over processes). Takes several minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
BRAID_FULL_MATRIX=1 exec "${BRAID_BUILD_DIR:-build}/tests/braid_multirank_tests" --gtest_filter='Full/ProcessFullMatrix.*'
