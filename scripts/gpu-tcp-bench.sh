#!/usr/bin/env bash
# GPU buffers between two ranks that reach each other over TCP only (loopback here; other hosts in a cluster):
# braid's windowed staging against NCCL's socket transport (NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1) in one run of
# braid-bench-device; then braid with the windows reduced by the host (BRAID_NET_STAGING_REDUCE=host) and with
# whole-buffer staging (BRAID_NET_STAGING_WINDOW=0), the earlier paths. On a machine
# with one GPU both ranks share it and NCCL is left out (it refuses two ranks on one GPU): braid's copies are all
# the GPU does, so the A/B between the two stagings still holds.
# Usage: scripts/gpu-tcp-bench.sh BUILD_DIR OUT_DIR   (MAX: largest size, default 1G; NAME: the machine's name in
# the file's name, default the host name)
# Writes one results file for the run, OUT_DIR/gpu-tcp-allreduce-NAME-DATE.json: every variant's rows tagged with
# its settings ("variant"), one meta with this command line (scripts/merge-results.py).
set -euo pipefail
command_line=""
for name in MAX NAME $(compgen -e | grep -E '^(BRAID|NCCL)_' | sort); do
  value=${!name:-}
  # Quoted for the shell where it needs it, in single quotes (readable: VARIANTS='A= A=1').
  [[ -n $value ]] && { [[ $(printf '%q' "$value") == "$value" ]] || value=${value@Q}; command_line+="$name=$value "; }
done
command_line+="$(printf '%q ' "$0" "$@")"
command_line=${command_line% }
[ $# -eq 2 ] || { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
build=$(realpath "$1")
mkdir -p "$2"
out=$(realpath "$2")
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
impl=braid,nccl
[ "$gpus" -ge 2 ] || impl=braid
export BRAID_TRANSPORT=tcp NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NVLS_ENABLE=0
merge_args=()
for variant in 16M:gpu 16M:host 0:host; do
  window=${variant%%:*} reduce=${variant##*:}
  json=$work/window$window-$reduce.json
  echo "== BRAID_NET_STAGING_WINDOW=$window BRAID_NET_STAGING_REDUCE=$reduce, --impl $impl, $gpus GPU(s)"
  BRAID_NET_STAGING_WINDOW=$window BRAID_NET_STAGING_REDUCE=$reduce "$build/bin/braid-bench-device" --nranks 2 \
    --impl "$impl" --collective allreduce -d float32 -b 1M -e "${MAX:-1G}" -f 4 -n 5 -w 2 --reps 3 --json "$json"
  merge_args+=(--variant "BRAID_NET_STAGING_WINDOW=$window BRAID_NET_STAGING_REDUCE=$reduce" "$json")
  impl=braid  # NCCL once is enough
done
result=$out/gpu-tcp-allreduce-${NAME:-$(hostname -s)}-$(date -u +%F).json
python3 scripts/merge-results.py "$result" --command "$command_line" \
  --link "2 ranks on one host, over TCP only (BRAID_TRANSPORT=tcp; NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1)" \
  "${merge_args[@]}"
