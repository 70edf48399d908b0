#!/usr/bin/env bash
# Ranks sharing one GPU, in one run (bench/results/onegpu-<machine>-<date>.json): braid-bench-device's allreduce,
# float32, verified, 8 B .. 64 MiB, with rank 0's device-to-device copy of each size beside it (--impl memcpy, the
# bandwidth reference):
#   processes  2 processes on GPU 0 (the default path: shared-GPU where no MPS server runs);
#   threads    2 threads of one process on GPU 0;
#   kernels    2 threads on braid's collective kernels (BRAID_CUDA_SHARED_GPU=kernels), 8 B .. 64 KiB: the host's
#              cost of issuing a kernel call against an empty kernel's launch (issue_us, empty_launch_us), beside the
#              same calls through NCCL's API on braid (nccl/'s libnccl.so.2: rows "nccl+threads"), where it is built;
#   apart      2 processes on GPU 0, each its own host id (--hosts-apart): braid over TCP against NCCL's socket
#              transport, which runs two ranks on one GPU only so (where a real libnccl.so.2 is found);
#   ncclapi    2 processes on GPU 0, braid's own calls beside the same calls through NCCL's API on braid (nccl/'s
#              libnccl.so.2: rows "nccl"), whose calls run apart from their callers (CallOptions::streamAsync).
# Usage: scripts/onegpu-bench.sh OUT.json   (BRAID_BUILD_DIR: where braid-bench-device was built; ITERS: calls per
# loop; VARIANTS: which of "processes threads kernels apart ncclapi" to run, all by default)
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
wanted=${VARIANTS:-processes threads kernels apart ncclapi}
wants() { [[ " $wanted " == *" $1 "* ]]; }
variants=()
if wants processes; then
  "$bench" "${common[@]}" --impl braid,memcpy -b 8 -e 64M --json "$tmp/processes.json"
  variants+=(--variant processes "$tmp/processes.json")
fi
if wants threads; then
  "$bench" "${common[@]}" --impl braid,memcpy -b 8 -e 64M --threads --json "$tmp/threads.json"
  variants+=(--variant threads "$tmp/threads.json")
fi
api=$build/nccl/libnccl.so.2
if wants kernels; then
  if [ -e "$api" ]; then
    BRAID_NCCL_LIBRARY=$(realpath "$api") BRAID_CUDA_SHARED_GPU=kernels "$bench" "${common[@]}" --impl braid,nccl -b 8 \
      -e 64K --threads --json "$tmp/kernels.json"
  else
    BRAID_CUDA_SHARED_GPU=kernels "$bench" "${common[@]}" --impl braid -b 8 -e 64K --threads --json "$tmp/kernels.json"
  fi
  variants+=(--variant "threads, BRAID_CUDA_SHARED_GPU=kernels" "$tmp/kernels.json")
fi
if wants ncclapi && [ -e "$api" ]; then
  BRAID_NCCL_LIBRARY=$(realpath "$api") "$bench" "${common[@]}" --impl braid,nccl -b 8 -e 64M \
    --json "$tmp/ncclapi.json"
  variants+=(--variant "processes, NCCL's API on braid" "$tmp/ncclapi.json")
fi
# The real NCCL: BRAID_NCCL_LIBRARY, else the one a Python package bundles (torch's nvidia-nccl), else the loader's.
real=${BRAID_NCCL_LIBRARY:-$(python3 -c 'import glob, site; print(next(iter(sorted(p for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/nccl/lib/libnccl.so.2"))), ""))' 2>/dev/null || true)}
if wants apart && env ${real:+BRAID_NCCL_LIBRARY=$real} "$bench" "${common[@]}" --impl braid,nccl -b 8 -e 64M -f 4 --hosts-apart \
    --json "$tmp/apart.json"; then
  variants+=(--variant "processes, hosts apart" "$tmp/apart.json")
fi
python3 scripts/merge-results.py "$out" --command "${VARIANTS:+VARIANTS=\"$VARIANTS\" }scripts/onegpu-bench.sh $(basename "$out")" "${variants[@]}"
python3 scripts/bench_meta.py check "$out"
