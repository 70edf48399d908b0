#!/usr/bin/env bash
# tests/mpi/mpi4py_cupy.py under mpirun with the interposer preloaded. Usage: mpi4py_cupy.sh INTERPOSER RANKS
# Exits 77 (skipped) where python3 lacks mpi4py or CuPy, or there is no GPU.
set -euo pipefail
interposer=$1 ranks=$2
nvidia-smi -L >/dev/null 2>&1 || { echo "no GPU: skipped"; exit 77; }
python3 -c "import mpi4py, cupy" 2>/dev/null || { echo "python3 has no mpi4py or CuPy: skipped"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
exec mpirun -np "$ranks" --mca btl self,vader -x LD_PRELOAD="$interposer" -x NCCL_NVLS_ENABLE=0 \
  python3 "$(dirname "$0")/mpi4py_cupy.py"
