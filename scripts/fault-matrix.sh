#!/usr/bin/env bash
# The fault matrix at scale: RUNS random cases (default 1000) of tests/faults/fault_matrix_test.cpp (a fault among
# SIGKILL, SIGSTOP, SIGTERM, _exit, leaving, abort() and a slow peer; 2, 3, 4 or 8 ranks over shm or TCP; five
# collectives, 64 B or ~1 MiB; delays 0, 5, 50 ms or random), then PROXY_RUNS (default RUNS) random network faults
# of tests/faults/tcp_proxy_fault_test.cpp (latency, loss-like stalls, reset, close, half-open through a TCP proxy;
# 2, 3, 4 or 8 ranks; 128 B or 4 MiB allreduces; the same delays), one JSON line per case, then a summary per
# fault: cases, passes, the slowest detection and the median one.
#   scripts/fault-matrix.sh [RUNS] [SEED] [REPORT.jsonl]      (after scripts/build.sh; PROXY_RUNS=0 skips the proxy,
#                                                             RUNS=0 the process faults; JOBS=K runs K at once)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-1000}
seed=${2:-$(date +%s)}
report=${3:-${BRAID_BUILD_DIR:-build}/fault-matrix-$seed.jsonl}
rm -f "$report"
status=0
bin=${BRAID_BUILD_DIR:-build}/tests/braid_fault_tests
# JOBS=K runs each part as K shards at once (consecutive seed ranges, one report each, joined afterwards): a machine
# with many cores gets through 1,000 cases in minutes. Cases that run together share the cores, so detection times
# are the loaded machine's.
jobs=${JOBS:-1}
shards() {  # filter, runs variable, runs
  local filter=$1 var=$2 total=$3 k pids=() per start n
  per=$(((total + jobs - 1) / jobs))
  for ((k = 0; k < jobs; ++k)); do
    start=$((k * per))
    n=$((total - start < per ? total - start : per))
    ((n > 0)) || continue
    env BRAID_TUNE_FILE=/dev/null "$var=$n" BRAID_FAULT_SEED=$((seed + start)) BRAID_FAULT_REPORT="$report.$filter.$k.jsonl" \
      "$bin" --gtest_filter="$filter.*" >"$report.$filter.$k.log" 2>&1 &
    pids+=($!)
  done
  for k in "${pids[@]}"; do wait "$k" || status=1; done
  cat "$report.$filter".*.log >>"$report.log"
  cat "$report.$filter".*.jsonl >>"$report" 2>/dev/null || true
  rm -f "$report.$filter".*
}
: >"$report.log"
[[ $runs -gt 0 ]] && shards FaultMatrix BRAID_FAULT_RUNS "$runs"
[[ ${PROXY_RUNS:-$runs} -gt 0 ]] && shards ProxyFaultMatrix BRAID_PROXY_FAULT_RUNS "${PROXY_RUNS:-$runs}"
python3 - "$report" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
print(f"{len(rows)} cases, {sum(r['passed'] for r in rows)} passed, {sum(r['seconds'] for r in rows):.0f} s")
print(f"{'fault':<16} {'cases':>6} {'passed':>7} {'median detection s':>19} {'slowest s':>10}")
for fault in sorted({r['fault'] for r in rows}):
    these = [r for r in rows if r['fault'] == fault]
    found = [r['slowest_detection_s'] for r in these if r['slowest_detection_s'] > 0]
    median = f"{statistics.median(found):.3f}" if found else "-"
    slowest = f"{max(found):.3f}" if found else "-"
    print(f"{fault:<16} {len(these):>6} {sum(r['passed'] for r in these):>7} {median:>19} {slowest:>10}")
for r in rows:
    if not r['passed']:
        print(f"FAILED seed {r['seed']}: {r['fault']} {r['ranks']} ranks {r['transport']} {r['collective']}: {r['failure']}")
PY
echo "report: $report (log: $report.log); replay a case with BRAID_FAULT_RUNS=1 (proxy: BRAID_PROXY_FAULT_RUNS=1)" \
  "BRAID_FAULT_SEED=<seed>"
exit "$status"
