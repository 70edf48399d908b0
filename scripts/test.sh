#!/usr/bin/env bash
# The whole test suite: installs dependencies (Debian 12, as root), builds, and runs every ctest test.
# BRAID_TEST_LABEL=unit|multirank|fuzz|sanitize|torch narrows it; scripts/full-matrix.sh runs the long process matrix.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
build=${BRAID_BUILD_DIR:-build}
# Tests measure what braid chooses by itself: a tune file `braid tune` left on this machine must not change it.
export BRAID_TUNE_FILE=/dev/null
# ctest counts a skipped test (e.g. netns_* where this machine cannot create network namespaces) with those that did
# not fail: the last lines of this command name every skipped family and why, however the run ends.
junit=$build/ctest-junit.xml
rm -f "$junit"
skip_summary() {
  local status=$?
  if [ -f "$junit" ]; then python3 scripts/ctest-skips.py "$junit" || true; fi
  exit "$status"
}
trap skip_summary EXIT
(cd "$build" && ctest --output-on-failure -j 2 --timeout 900 --output-junit ctest-junit.xml \
  ${BRAID_TEST_LABEL:+-L "$BRAID_TEST_LABEL"})
# The fuzz harnesses (tests/fuzz), 60 s each under ASan+UBSan (BRAID_TEST_LABEL=fuzz alone runs these;
# BRAID_SKIP_FUZZ=1 leaves them out; scripts/fuzz.sh SECONDS runs them longer).
if [ -z "${BRAID_SKIP_FUZZ:-}" ] && { [ -z "${BRAID_TEST_LABEL:-}" ] || [ "$BRAID_TEST_LABEL" = fuzz ]; }; then
  scripts/fuzz.sh "${BRAID_FUZZ_SECONDS:-60}"
fi
# ASan + UBSan over the unit tests and the 2-3-rank thread matrices, in the fuzzers' build directory and so on their
# instrumented library (BRAID_TEST_LABEL=sanitize alone runs these; BRAID_SKIP_SANITIZE=1 leaves them out;
# scripts/sanitize.sh asan|tsan runs whole suites).
if [ -z "${BRAID_SKIP_SANITIZE:-}" ] && { [ -z "${BRAID_TEST_LABEL:-}" ] || [ "$BRAID_TEST_LABEL" = sanitize ]; }; then
  scripts/sanitize.sh ci
fi
# The PyTorch backend (python/, tests/torch/): pytest in a venv with PyPI's torch (BRAID_TEST_LABEL=torch alone runs
# these; BRAID_SKIP_TORCH=1 leaves them out).
if [ -z "${BRAID_SKIP_TORCH:-}" ] && { [ -z "${BRAID_TEST_LABEL:-}" ] || [ "$BRAID_TEST_LABEL" = torch ]; }; then
  python=$(BRAID_BUILD_DIR=$build scripts/torch-env.sh | tail -1)
  (cd tests/torch && BRAID_BUILD_DIR=$build timeout 1200 "$python" -m pytest -q -p no:cacheprovider)
  # braid's libnccl.so.2 against the NCCL that torch bundles (its nccl.h, libtorch_cuda.so's imports).
  BRAID_BUILD_DIR=$build timeout 900 scripts/nccl-torch-check.sh "$python"
fi
