#!/usr/bin/env bash
# Ranks sharing one GPU, in one run (bench/results/onegpu-<machine>-<date>.json): braid-bench-device's allreduce,
# float32, verified, 8 B .. 64 MiB, with rank 0's device-to-device copy of each size beside it (--impl memcpy, the
# bandwidth reference):
#   processes  2 processes on GPU 0 (the default path: shared-GPU where no MPS server runs);
#   threads    2 threads of one process on GPU 0;
#   kernels    2 threads on braid's collective kernels (BRAID_CUDA_SHARED_GPU=kernels), 8 B .. 64 KiB: the host's
#              cost of issuing a kernel call against an empty kernel's launch (issue_us, empty_launch_us).
# Usage: scripts/onegpu-bench.sh OUT.json   (BRAID_BUILD_DIR: where braid-bench-device was built; ITERS: calls per loop)
# Each run's own file stays in OUT.parts/.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/onegpu-bench.sh OUT.json}
build=${BRAID_BUILD_DIR:-build-gpu-check}
bench=$build/bin/braid-bench-device
iters=${ITERS:-50}
tmp=${out%.json}.parts
mkdir -p "$tmp"
common=(--nranks 2 --collective allreduce -d float32 -f 2 -n "$iters" -w 5 --reps 3)
"$bench" "${common[@]}" --impl braid,memcpy -b 8 -e 64M --json "$tmp/processes.json"
"$bench" "${common[@]}" --impl braid,memcpy -b 8 -e 64M --threads --json "$tmp/threads.json"
BRAID_CUDA_SHARED_GPU=kernels "$bench" "${common[@]}" --impl braid -b 8 -e 64K --threads --json "$tmp/kernels.json"
python3 scripts/merge-results.py "$out" \
  --command "scripts/onegpu-bench.sh $(basename "$out")" \
  --variant processes "$tmp/processes.json" \
  --variant threads "$tmp/threads.json" \
  --variant "threads, BRAID_CUDA_SHARED_GPU=kernels" "$tmp/kernels.json"
python3 scripts/bench_meta.py check "$out"
