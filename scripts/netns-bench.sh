#!/usr/bin/env bash
# braid, Gloo and Open MPI on the same shaped multi-host bed (scripts/netns-bed.sh): HOSTS network namespaces, RANKS
# ranks in each, every link shaped to RATE both ways; one sweep each, in that order, merged into one JSON. Needs
# root, iproute2 and tc, and a build with braid-bench-gloo (libgloo-dev) and braid-bench-mpi (libopenmpi-dev); a
# peer whose driver is missing is left out.
#
#   scripts/netns-bench.sh HOSTS RANKS RATE OUT.json [braid bench options, e.g. allreduce -b 1M -e 64M -f 4]
#
# VARIANTS="BRAID_COMPRESS= BRAID_COMPRESS=bf16" runs braid once per variant (each a comma-separated list of
# NAME=VALUE settings), its rows tagged with the variant; Gloo and Open MPI run once, untagged: their rows do not
# depend on braid's settings. BRAID_BUILD_DIR (default build) holds bin/braid and bin/braid-bench-gloo. RAILS=K
# gives every host K links of RATE each (several NICs): braid takes them all (BRAID_IFNAME==eth0,...), Open MPI's
# TCP btl too (if_include); Gloo's device binds one address, as it does on a real multi-NIC host. The file's meta
# records this command line (with the VARIANTS, RAILS and BRAID_* settings it ran under), the bed as its link, and
# every peer's version (scripts/merge-results.py).
set -euo pipefail
# The command line as run, first, for the results' meta: the settings that change what runs, then the arguments.
command_line=""
for name in VARIANTS RAILS $(compgen -e | grep '^BRAID_' | sort); do
  value=${!name:-}
  # Quoted for the shell where it needs it, in single quotes (readable: VARIANTS='A= A=1').
  [[ -n $value ]] && { [[ $(printf '%q' "$value") == "$value" ]] || value=${value@Q}; command_line+="$name=$value "; }
done
command_line+="$(printf '%q ' "$0" "$@")"
command_line=${command_line% }
cd "$(dirname "$0")/.."
[[ $# -ge 4 ]] || { sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
hosts=$1 per_host=$2 rate=$3 out=$4
shift 4
case $out in /*) ;; *) out=$OLDPWD/$out ;; esac  # relative to where it was run, not to the repository
coll=${1:-allreduce}
shift || true
bin=${BRAID_BUILD_DIR:-build}/bin
[[ -x $bin/braid ]] || { echo "netns-bench: no $bin/braid" >&2; exit 1; }
size=$((hosts * per_host))
export NETNS_BED_PREFIX="braidb$$"
work=$(mktemp -d)
cleanup() { scripts/netns-bed.sh down; rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
rails=${RAILS:-1}
scripts/netns-bed.sh up "$hosts" --rate "$rate" --rails "$rails"
ifaces=$(seq -s, -f 'eth%g' 0 $((rails - 1)))

# Defaults sized for a shaped link: a few MiB to 64 MiB, enough calls to average the shaper's bursts.
opts=(-b 1M -e 64M -f 4 -n 10 -w 3 --reps 3)
(($# > 0)) && opts=("$@")

run_ranks() {  # what, then the command per rank (RANK and HOST_IP set for it)
  local what=$1 pids=() r
  shift
  for ((r = 0; r < size; ++r)); do
    local h=$((r / per_host))
    scripts/netns-bed.sh run "$h" -- env RANK="$r" WORLD_SIZE="$size" HOST_IP="10.77.0.$((h + 1))" "$@" \
      >"$work/$what-$r.log" 2>&1 &
    pids+=($!)
  done
  local status=0
  for ((r = 0; r < size; ++r)); do wait "${pids[$r]}" || status=1; done
  if ((status)); then
    echo "netns-bench: $what failed:" >&2
    tail -n 20 "$work"/"$what"-*.log >&2
    exit 1
  fi
  cat "$work/$what-0.log"
}

# braid: ranks started as a launcher would (the bench measures as one rank of the job; rank 0 writes the rows), once
# per variant, each with its settings in the ranks' environment.
read -ra variants <<<"${VARIANTS:-}"
((${#variants[@]})) || variants=("")
merge_args=()
for ((v = 0; v < ${#variants[@]}; ++v)); do
  IFS=, read -ra settings <<<"${variants[$v]}"
  token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
  [[ -n ${variants[$v]} ]] && echo "== braid with ${variants[$v]}"
  run_ranks "braid$v" env "${settings[@]}" sh -c "BRAID_RANK=\$RANK BRAID_WORLD_SIZE=\$WORLD_SIZE \
    BRAID_ROOT_ADDR=10.77.0.1:29500 BRAID_TOKEN=$token BRAID_IFNAME==$ifaces \
    BRAID_TCP_STREAMS=$((rails > 1 ? 2 * rails : 2)) exec $bin/braid bench $coll ${opts[*]} --json $work/braid$v.json"
  merge_args+=(--variant "${variants[$v]}" "$work/braid$v.json")
done
# Gloo: its file store in a directory every namespace sees, its TCP device on each host's address.
mkdir -p "$work/store"
run_ranks gloo sh -c "BRAID_BENCH_STORE=$work/store BRAID_BENCH_GLOO_HOST=\$HOST_IP exec $bin/braid-bench-gloo \
  --collective $coll ${opts[*]} --json $work/gloo.json"
# Open MPI: mpirun inside host 0's namespace, its daemons started on the other hosts by an rsh agent that enters
# their namespaces (plm rsh named: an image may set OMPI_MCA_plm=isolated, which launches nothing remote); the TCP
# btl (and its own wire-up) on eth0, the bed's interface.
if [[ -x $bin/braid-bench-mpi ]] && command -v mpirun >/dev/null; then
  cat >"$work/agent.sh" <<AGENT
#!/bin/sh
# "HOST COMMAND...": COMMAND in the namespace of HOST (10.77.0.N is host N-1).
host=\$1
shift
n=\${host##*.}
# A session directory per host: the namespaces share /tmp and one hostname, and Open MPI names its directories by it.
mkdir -p "$work/tmp-\$n"
exec ip netns exec "${NETNS_BED_PREFIX}-ns\$((n - 1))" env TMPDIR="$work/tmp-\$n" sh -c "\$*"
AGENT
  chmod +x "$work/agent.sh"
  for ((h = 0; h < hosts; ++h)); do echo "10.77.0.$((h + 1)) slots=$per_host"; done >"$work/hostfile"
  root_flag=()
  (($(id -u) == 0)) && root_flag=(--allow-run-as-root)
  scripts/netns-bed.sh run 0 -- mpirun "${root_flag[@]}" --hostfile "$work/hostfile" -np "$size" --bind-to none \
    --mca plm rsh --mca plm_rsh_agent "$work/agent.sh" --mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include "$ifaces" \
    --mca oob_tcp_if_include eth0 "$bin/braid-bench-mpi" --collective "$coll" "${opts[@]}" --json "$work/mpi.json" \
    >"$work/mpi.log" 2>&1 || {
    echo "netns-bench: mpirun failed ($(mpirun --version 2>&1 | head -1); $(env | grep -c '^OMPI_') OMPI_ variables):" >&2
    env | grep '^OMPI_' >&2
    head -n 12 "$work/mpi.log" >&2
    exit 1
  }
  cat "$work/mpi.log"
fi
merge_args+=(--variant "" "$work/gloo.json")
[[ -f $work/mpi.json ]] && merge_args+=("$work/mpi.json")
bed="$hosts network namespaces, $per_host rank(s) in each, veth pairs to a bridge, tc tbf $rate each way"
((rails > 1)) && bed+=", $rails rails per host"
python3 scripts/merge-results.py "$out" --command "$command_line" --link "$bed" "${merge_args[@]}"
echo "netns-bench: $hosts hosts x $per_host ranks at $rate: $out"
