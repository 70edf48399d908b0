#!/usr/bin/env bash
# BRAID_SHM_THREADS=auto against the size of /dev/shm, through the real detection: one rank on this machine's CPUs,
# in a private mount namespace whose /dev/shm is a tmpfs of a chosen size. Roomy: the CPUs' threads (at most 8).
# 2 MiB: one thread (two would take more than half). 512 KiB: not even one thread's region fits, and creation fails
# with an error that names the rank, /dev/shm and the fix, at once.
# Exits 77 (skipped) where no mount namespace can be made (not root) or with one CPU (auto runs no helpers there).
set -uo pipefail
braid=$1

unshare -m true 2>/dev/null || { echo "skipped: cannot make a mount namespace here"; exit 77; }
cpus=$(nproc)
((cpus >= 2)) || { echo "skipped: one CPU, so auto runs no helper threads"; exit 77; }
want=$((cpus < 8 ? cpus : 8))

# Prints what one rank's allreduce said with /dev/shm of $1, then "rc=N".
under() {
  unshare -m sh -c "mount -t tmpfs -o size=$1 tmpfs /dev/shm || exit 90
    env -u BRAID_SHM_THREADS -u BRAID_SHM_SLOT_BYTES -u BRAID_SHM_P2P_BYTES BRAID_TUNE_FILE=/dev/null BRAID_LOG=info \
      BRAID_TIMEOUT=30 timeout 60 '$braid' run -n 1 -- '$braid' bench allreduce --nranks 1 -b 1M -e 1M -n 2" 2>&1
  echo "rc=$?"
}

failed=0
expect() {  # what, output, pattern
  if ! grep -qF -- "$3" <<<"$2"; then
    echo "FAILED: $1: no '$3' in:"
    echo "$2" | tail -5
    failed=1
  fi
}

out=$(under 64m)
expect "64 MiB" "$out" "$want thread(s) a rank"
expect "64 MiB" "$out" "rc=0"
out=$(under 2m)
expect "2 MiB" "$out" "1 thread(s) a rank"
expect "2 MiB" "$out" "rc=0"
out=$(under 512k)
expect "512 KiB" "$out" "[rank 0, create]: /dev/shm cannot hold"
expect "512 KiB" "$out" "docker run --shm-size"
if grep -q "rc=0" <<<"$out"; then
  echo "FAILED: 512 KiB: the run succeeded"
  failed=1
fi
((failed == 0)) && echo "auto threads fit /dev/shm: $want at 64 MiB, 1 at 2 MiB, a clear error at 512 KiB"
exit $failed
