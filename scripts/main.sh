#!/usr/bin/env bash
# braid's main job: installs what it needs (Debian 12, as root), builds braid, and runs a verified
# `braid bench` allreduce sweep (8 B .. 64 MiB, results checked) on 4 local ranks over shared memory.
# Extra arguments go to braid bench, e.g. `scripts/main.sh --compare gloo,mpi --json out.json`.
# (GPU buffers join with the CUDA path: then this runs on the GPUs when present.)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
exec "${BRAID_BUILD_DIR:-build}/bin/braid" bench allreduce -b 8 -e 64M -f 2 -n 20 -w 5 -c 1 --nranks "${RANKS:-4}" "$@"
