#!/usr/bin/env bash
# Builds the libFuzzer harnesses of tests/fuzz with clang (ASan + UBSan, everything instrumented) into
# ${BRAID_FUZZ_DIR:-build-fuzz} and runs each for SECONDS (default 60), starting from the seed corpus in
# tests/fuzz/corpus/NAME (the topology reader also from tests/fixtures/topology). New inputs go to a scratch copy;
# an input that breaks a harness is saved as $out/crash-* and the script fails, naming it.
#   scripts/fuzz.sh [SECONDS] [NAME...]       NAME: frame handshake store topology_json text (default: all)
# --merge: afterwards, fold what the run found into the seed corpus (minimised with libFuzzer's -merge=1).
# --configure: only configure the build directory (scripts/sanitize.sh fuzz builds the CPU tests in it too: the
# tests are configured here, and built only when asked for, so both share one instrumented library).
set -euo pipefail
cd "$(dirname "$0")/.."
merge=0 configure_only=0
args=()
for a in "$@"; do
  case $a in
    --merge) merge=1 ;;
    --configure) configure_only=1 ;;
    *) args+=("$a") ;;
  esac
done
seconds=${args[0]:-60}
names=("${args[@]:1}")
((${#names[@]})) || names=(frame handshake store topology_json text)
build=${BRAID_FUZZ_DIR:-build-fuzz}
out=${BRAID_FUZZ_OUT:-$build/runs}
CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBRAID_FUZZ=ON \
  -DBRAID_WITH_CUDA=OFF -DBRAID_BUILD_TESTS=ON -DBRAID_BUILD_TOOLS=OFF >/dev/null
((configure_only)) && exit 0
cmake --build "$build" -j "$(nproc)" --target "${names[@]/#/fuzz_}"
failed=()
for name in "${names[@]}"; do
  scratch=$out/$name
  rm -rf "$scratch"
  mkdir -p "$scratch/corpus"
  seeds=(tests/fuzz/corpus/$name)
  [ "$name" = topology_json ] && seeds+=(tests/fixtures/topology)
  # Each run is bounded twice: libFuzzer's own clock, and a hard kill a minute later should an input hang.
  if timeout -k 10 $((seconds + 60)) "$build/fuzz/fuzz_$name" -max_total_time="$seconds" -max_len=4096 -timeout=10 \
      -rss_limit_mb=4096 -artifact_prefix="$scratch/" -print_final_stats=1 "$scratch/corpus" "${seeds[@]}" \
      >"$scratch/log.txt" 2>&1; then
    execs=$(grep -m1 -E "stat::number_of_executed_units" "$scratch/log.txt" | awk '{print $2}')
    echo "fuzz $name: ${execs:-?} inputs in ${seconds} s, nothing broke"
  else
    failed+=("$name")
    echo "fuzz $name: FAILED (log $scratch/log.txt, input $(ls "$scratch"/crash-* "$scratch"/timeout-* "$scratch"/leak-* 2>/dev/null | head -1))"
    grep -E "ERROR|runtime error|broken|escaped|SUMMARY" "$scratch/log.txt" | head -10
  fi
  if ((merge)); then
    "$build/fuzz/fuzz_$name" -merge=1 -max_len=4096 "tests/fuzz/corpus/$name" "$scratch/corpus" >/dev/null 2>&1
  fi
done
if ((${#failed[@]})); then
  echo "fuzz: broken: ${failed[*]}"
  exit 1
fi
