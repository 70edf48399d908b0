#!/usr/bin/env bash
# Benchmark variants for tuning the device path on the lent GPU machine, after scripts/gpu-check.sh built braid:
# each line is "TAG ENV... -- DEVICE_* settings"; every variant writes bench-device-<coll>-<dtype>-<TAG>.txt under
# $OUT and all of them are gathered into $OUT/sweeps.txt (the machine returns only a few files).
# Usage: scripts/gpu-sweeps.sh VARIANT...   VARIANT: tag:ENV=V,ENV=V:min:max:factor:colls (colls as DEVICE_BENCH,
# with + for spaces), e.g. small-ll:BRAID_ALGO=ll:8:64K:4:allreduce:float32+allreduce:bfloat16
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
out=${OUT:-/tmp/gpu-sweeps}
mkdir -p "$out"
for v in "$@"; do
  IFS=: read -r tag envs min max factor colls <<<"$v"
  (
    IFS=, read -ra pairs <<<"$envs"
    for kv in "${pairs[@]}"; do [ -n "$kv" ] && export "${kv?}"; done
    DEVICE_TAG=$tag DEVICE_MIN=$min DEVICE_MAX=$max DEVICE_FACTOR=$factor DEVICE_BENCH=${colls//+/ } \
      DEVICE_EXTRA=${DEVICE_EXTRA:-} scripts/gpu-check.sh bench-device >/dev/null 2>&1
  )
  for f in "$out"/bench-device-*-"$tag".txt; do
    [ -e "$f" ] || continue
    { echo "### $tag ($envs) ${f##*/}"; cat "$f"; } >>"$out/sweeps.txt"
    rm -f "$f"
  done
done
