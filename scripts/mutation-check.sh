#!/usr/bin/env bash
# Proves that the GPU tests' expected values can catch a wrong kernel: builds braid's GPU tests from a copy of this
# tree with one deliberate bug in the device reduction operators, runs the reduction tests, and passes only when they
# fail. A test whose expected values came from braid's own code paths would pass with the same bug on both sides.
#
# Usage: scripts/mutation-check.sh [MUTATION...]   (default: every one below). GPU machine only (it runs kernels).
#   sum-as-product  SumOp folds with a product instead of a sum
#   avg-off-by-one  AvgOp divides the float32 sum by one rank more than there are
# The copy and its build live in ${MUTANT_DIR:-build-mutant}; logs go to $OUT when set, else there.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
repo=$PWD
work=${MUTANT_DIR:-$repo/build-mutant}
logs=${OUT:-$work}
ops=src/cuda/device/reduce_ops.cuh
filter='AllTypes/DeviceReduce.*:AvgTypes/DeviceReduceAverage.*:Algorithms/DeviceReductions.AllreduceEveryTypeOpAndSizeOn2Ranks/*'

# Each mutation: a sed expression on $ops and a line it must change (so a renamed operator fails loudly here).
declare -A edit=(
  [sum-as-product]='/struct SumOp/,/};/s/return addAcc(a, b);/return mulAcc(a, b);/'
  [avg-off-by-one]='/struct AvgOp/,/^};/s/static_cast<float>(divisor)/static_cast<float>(divisor + 1)/'
)
mutations=("$@")
((${#mutations[@]})) || mutations=(sum-as-product avg-off-by-one)

mkdir -p "$work/tree" "$logs"
# The tree without build outputs; .debs travel so that gpu-check.sh finds its packages.
tar -C "$repo" --exclude='./build*' --exclude='./.git' -cf - . | tar -C "$work/tree" -xf -
cp "$work/tree/$ops" "$work/original.cuh"

failed=()
for m in "${mutations[@]}"; do
  if [ -z "${edit[$m]:-}" ]; then
    echo "mutation-check: unknown mutation '$m' (known: ${!edit[*]})" >&2
    exit 2
  fi
  cp "$work/original.cuh" "$work/tree/$ops"
  sed -i "${edit[$m]}" "$work/tree/$ops"
  if cmp -s "$work/original.cuh" "$work/tree/$ops"; then
    echo "mutation-check: $m changed nothing in $ops (the operator it targets moved)" >&2
    failed+=("$m")
    continue
  fi
  if ! (cd "$work/tree" && BRAID_BUILD_DIR="$work/build" BUILD_TARGETS=braid_gpu_tests OUT="$logs/$m" \
      scripts/gpu-check.sh build >/dev/null 2>&1); then
    echo "mutation-check: $m did not build (logs in $logs/$m)"
    failed+=("$m")
    continue
  fi
  "$work/build/tests/braid_gpu_tests" --gtest_filter="$filter" --gtest_brief=1 >"$logs/$m.txt" 2>&1
  rc=$?
  caught=$(grep -c '^\[  FAILED  \] [A-Za-z]' "$logs/$m.txt")
  if [ "$rc" -ne 0 ] && [ "$caught" -gt 0 ]; then
    echo "mutation-check: $m caught by $caught tests: $(grep '^\[  FAILED  \] [A-Za-z]' "$logs/$m.txt" |
      awk '{sub(/,$/, "", $4); print $4}' | sort -u | head -8 | tr '\n' ' ')"
  else
    echo "mutation-check: $m NOT caught (the reduction tests passed with it; log $logs/$m.txt)"
    failed+=("$m")
  fi
done
cp "$work/original.cuh" "$work/tree/$ops"
((${#failed[@]} == 0)) || { echo "mutation-check failed: ${failed[*]}"; exit 1; }
echo "mutation-check: every mutation was caught"
