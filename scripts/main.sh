#!/usr/bin/env bash
# braid's main job: installs what it needs (Debian 12, as root), builds braid, and runs its verified sweeps
# (results checked element by element):
#   - on a machine with a GPU, first the allreduce on GPU buffers (braid-bench-device, 8 B .. 64 MiB): one rank per
#     GPU, or 2 ranks sharing the GPU where there is only one; NCCL beside braid where it can run (two or more GPUs
#     and a libnccl.so.2; NCCL refuses two ranks on one GPU);
#   - then the allreduce on host buffers (`braid bench`, 8 B .. 64 MiB) on 4 local ranks over shared memory.
# Extra arguments go to braid bench, e.g. `scripts/main.sh --compare gloo,mpi --json out.json`; DEVICE_JSON=FILE
# keeps the device sweep's results, RANKS=N sets the host sweep's ranks.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
build=${BRAID_BUILD_DIR:-build}
gpus=0
if command -v nvidia-smi >/dev/null; then gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true); fi
if [ "$gpus" -gt 0 ] && [ -x "$build/bin/braid-bench-device" ]; then
  ranks=$((gpus >= 2 ? gpus : 2))
  device=("$build/bin/braid-bench-device" --nranks "$ranks" --collective allreduce -d float32 -b 8 -e 64M -f 4
          -n 20 -w 5 -c 1 ${DEVICE_JSON:+--json "$DEVICE_JSON"})
  echo "== allreduce on GPU buffers: $ranks ranks on $gpus GPU(s)"
  if [ "$gpus" -ge 2 ] && "${device[@]}" --impl braid,nccl; then
    :
  else
    [ "$gpus" -ge 2 ] && echo "== NCCL could not run here (see above): braid alone"
    "${device[@]}" --impl braid
  fi
  echo "== allreduce on host buffers"
elif [ "$gpus" -gt 0 ]; then
  echo "== $gpus GPU(s), but braid was built without CUDA (no nvcc): host buffers only"
fi
exec "$build/bin/braid" bench allreduce -b 8 -e 64M -f 2 -n 20 -w 5 -c 1 --nranks "${RANKS:-4}" "$@"
