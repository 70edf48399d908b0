#!/usr/bin/env bash
# The MPI interposer's bars (issue 13), with bench/mpi_interposer_bench.c:
#   host:   8-byte MPI_Allreduce of host buffers, the MPI alone and with libbraid_mpi.so preloaded, alternating
#           ROUNDS times (the added time per call is the difference of medians);
#   device: MPI_Allreduce of GPU buffers through the interposer against braid's own API (needs a GPU).
# Usage: scripts/mpi-interposer-bench.sh host|device [RANKS] [ROUNDS]; BRAID_BUILD_DIR picks the build (build).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-host} ranks=${2:-2} rounds=${3:-3}
build=${BRAID_BUILD_DIR:-build}
bench=$build/bin/braid-bench-mpi-interposer
interposer=$(realpath "$build/mpi/libbraid_mpi.so")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mpi=(mpirun -np "$ranks" --mca btl self,vader --bind-to none)
echo "# $(date -u +%FT%TZ) $(hostname) $(nproc) cores; $(mpirun --version | head -1)"
if [ "$mode" = host ]; then
  for ((i = 0; i < rounds; ++i)); do
    "${mpi[@]}" "$bench" host | grep -v "^ *bytes"
    "${mpi[@]}" -x LD_PRELOAD="$interposer" "$bench" host | grep -v "^ *bytes"
  done
else
  "${mpi[@]}" -x LD_PRELOAD="$interposer" "$bench" device "${4:-1073741824}"
fi
