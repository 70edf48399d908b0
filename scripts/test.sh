#!/usr/bin/env bash
# The whole test suite: installs dependencies (Debian 12, as root), builds, and runs every ctest test.
# BRAID_TEST_LABEL=unit|multirank narrows it; scripts/full-matrix.sh runs the long process matrix.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
cd "${BRAID_BUILD_DIR:-build}"
ctest --output-on-failure -j 2 --timeout 900 ${BRAID_TEST_LABEL:+-L "$BRAID_TEST_LABEL"}
