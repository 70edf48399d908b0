#!/usr/bin/env bash
# braid's main job: builds braid and runs a verified allreduce sweep on local ranks (CPU, shared memory).
# Installs its dependencies on Debian 12 (as root). RANKS defaults to 4.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
exec "${BRAID_BUILD_DIR:-build}/examples/local_allreduce" -n "${RANKS:-4}" "$@"
