#!/usr/bin/env bash
# Runs tests/mpi/mpi_collectives under mpirun twice, without and with the interposer preloaded, and requires the
# same bytes from both. Usage: compare.sh PROGRAM INTERPOSER RANKS MODE (host or device).
set -euo pipefail
program=$1 interposer=$2 ranks=$3 mode=$4
if [ "$mode" = device ] && ! nvidia-smi -L >/dev/null 2>&1; then
  echo "no GPU: the device-buffer run is skipped"
  exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mpi=(mpirun -np "$ranks" --mca btl self,vader)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The stock MPI cannot take GPU buffers: the device run's reference is the host run (same inputs, same results).
"${mpi[@]}" "$program" "$([ "$mode" = device ] && echo host || echo "$mode")" "$tmp/plain" >/dev/null
"${mpi[@]}" -x LD_PRELOAD="$interposer" -x BRAID_LOG=info "$program" "$mode" "$tmp/preloaded" >/dev/null 2>"$tmp/log"
cat "$tmp"/plain.rank* >"$tmp/plain"
cat "$tmp"/preloaded.rank* >"$tmp/preloaded"
if [ "$mode" = device ]; then
  # Identical results alone would not show that braid ran the calls: its kernels' channel must have been made, and
  # only the calls braid cannot run (derived types, MPI_LAND, the v-forms it lacks) may say they were staged.
  grep -q "cuda_ipc: GPU .* joined" "$tmp/log" || { echo "braid's kernels did not run the GPU calls:"; head -20 "$tmp/log"; exit 1; }
  staged=$(grep -o "braid_mpi: MPI_[A-Za-z_]* on GPU buffers staged" "$tmp/log" | sort -u | cut -d' ' -f2 | tr '\n' ' ')
  echo "staged through host memory: $staged"
  for call in $staged; do
    case $call in
      MPI_Allreduce | MPI_Bcast | MPI_Gatherv | MPI_Scatterv | MPI_Reduce_scatter) ;;
      *) echo "$call was staged, braid should have run it"; exit 1 ;;
    esac
  done
fi
grep -q "interposer absent" "$tmp/plain" || { echo "the plain run saw the interposer"; exit 1; }
grep -q "interposer loaded" "$tmp/preloaded" || { echo "the interposer was not loaded"; exit 1; }
# Where the MPI has Open MPI's CUDA extension, the program asks it: the interposer must answer yes.
if grep -q "interposer cuda-aware" "$tmp/preloaded"; then
  grep -q "interposer cuda-aware 1" "$tmp/preloaded" || { echo "MPIX_Query_cuda_support() is not 1 under the interposer"; exit 1; }
fi
# Every line names its rank; sorted, the two runs' files compare line by line.
for f in plain preloaded; do sed '/^interposer /d' "$tmp/$f" | sort >"$tmp/$f.sorted"; mv "$tmp/$f.sorted" "$tmp/$f"; done
lines=$(wc -l <"$tmp/plain")
[ "$lines" -gt 100 ] || { echo "only $lines result lines"; exit 1; }
if ! diff -q "$tmp/plain" "$tmp/preloaded" >/dev/null; then
  echo "results differ with the interposer ($mode buffers):"
  diff "$tmp/plain" "$tmp/preloaded" | cut -c1-200 | head -20
  exit 1
fi
echo "$lines result lines identical with and without the interposer ($ranks ranks, $mode buffers)"
