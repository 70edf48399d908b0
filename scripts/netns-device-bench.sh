#!/usr/bin/env bash
# braid against NCCL on GPU buffers between hosts of the shaped namespace bed (scripts/netns-bed.sh): HOSTS network
# namespaces, one rank in each, every link shaped to RATE both ways; the ranks share this machine's GPUs (rank r on
# GPU r % GPUs), which NCCL allows between hosts: both libraries then stage through host memory over TCP sockets
# (braid-bench-device --netns: each rank its own host id, NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1). Needs root,
# iproute2 and tc, a CUDA build of braid-bench-device, and a libnccl.so.2 (BRAID_NCCL_LIBRARY, else the one a Python
# package bundles).
#
#   scripts/netns-device-bench.sh HOSTS RATE OUT.json [braid-bench-device options, default allreduce 8 B .. 64 MiB]
set -euo pipefail
# The command line as run, for the results' meta: braid's settings first (BRAID_NET_STAGING_WINDOW=4M, ...).
command_line=""
for name in $(compgen -e | grep '^BRAID_' | grep -v '^BRAID_SOURCE_' | sort); do
  command_line+="$name=$(printf '%q' "${!name}") "
done
command_line+="$(printf '%q ' "$0" "$@")"
command_line=${command_line% }
cd "$(dirname "$0")/.."
[[ $# -ge 3 ]] || { sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
hosts=$1 rate=$2 out=$3
shift 3
case $out in /*) ;; *) out=$OLDPWD/$out ;; esac
bench=${BRAID_BUILD_DIR:-build}/bin/braid-bench-device
[[ -x $bench ]] || { echo "netns-device-bench: no $bench (a CUDA build)" >&2; exit 1; }
real=${BRAID_NCCL_LIBRARY:-$(python3 -c 'import glob, site; print(next(iter(sorted(p for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/nccl/lib/libnccl.so.2"))), ""))' 2>/dev/null || true)}
export NETNS_BED_PREFIX="braidd$$"
work=$(mktemp -d)
cleanup() { scripts/netns-bed.sh down; rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
scripts/netns-bed.sh up "$hosts" --rate "$rate"
opts=(--collective allreduce -d float32 -b 8 -e 64M -f 4 -n 20 -w 3 --reps 3)
(($# > 0)) && opts=("$@")
env NCCL_NVLS_ENABLE=0 ${real:+BRAID_NCCL_LIBRARY=$real} "$bench" --nranks "$hosts" --netns "$NETNS_BED_PREFIX" \
  --impl braid,nccl "${opts[@]}" --json "$work/device.json"
bed="$hosts network namespaces, 1 rank in each, veth pairs to a bridge, tc tbf $rate each way"
python3 scripts/merge-results.py "$out" --command "$command_line" --link "$bed" "$work/device.json"
echo "netns-device-bench: $hosts hosts at $rate: $out"
