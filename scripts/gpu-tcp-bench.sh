#!/usr/bin/env bash
# GPU buffers between two ranks that reach each other over TCP only (loopback here; other hosts in a cluster):
# braid's windowed staging against NCCL's socket transport (NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1) in one run of
# braid-bench-device; then braid with the windows reduced by the host (BRAID_NET_STAGING_REDUCE=host) and with
# whole-buffer staging (BRAID_NET_STAGING_WINDOW=0), the earlier paths. On a machine
# with one GPU both ranks share it and NCCL is left out (it refuses two ranks on one GPU): braid's copies are all
# the GPU does, so the A/B between the two stagings still holds.
# Usage: scripts/gpu-tcp-bench.sh BUILD_DIR OUT_DIR   (MAX: largest size, default 1G)
set -euo pipefail
build=$1 out=$2
mkdir -p "$out"
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
impl=braid,nccl
[ "$gpus" -ge 2 ] || impl=braid
export BRAID_TRANSPORT=tcp NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NVLS_ENABLE=0
for variant in 16M:gpu 16M:host 0:host; do
  window=${variant%%:*} reduce=${variant##*:}
  json=$out/gpu-tcp-allreduce-float32-window$window-$reduce-$(date +%F).json
  echo "== BRAID_NET_STAGING_WINDOW=$window BRAID_NET_STAGING_REDUCE=$reduce, --impl $impl, $gpus GPU(s)"
  BRAID_NET_STAGING_WINDOW=$window BRAID_NET_STAGING_REDUCE=$reduce "$build/bin/braid-bench-device" --nranks 2 \
    --impl "$impl" --collective allreduce -d float32 -b 1M -e "${MAX:-1G}" -f 4 -n 5 -w 2 --reps 3 --json "$json"
  impl=braid  # NCCL once is enough
done
