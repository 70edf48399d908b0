#!/usr/bin/env bash
# A test bed of N "hosts" on this machine: network namespaces joined by veth pairs to one bridge, so that braid's
# cross-host paths (TCP, interface choice, host identity) run without a cluster. Needs root and iproute2.
#
#   scripts/netns-bed.sh up N [--rate 10gbit] [--rails K]
#                                               N namespaces PREFIX-ns0..N-1, eth0 = 10.77.0.(i+1)/24 in each;
#                                               --rate shapes each link both ways with tc tbf; --rails K gives each
#                                               host K links (ethJ = 10.77.J.(i+1)/24 on bridge J), as several NICs
#   scripts/netns-bed.sh down                   removes the bed (nothing there is fine)
#   scripts/netns-bed.sh run I -- CMD...        runs CMD in namespace I
#   scripts/netns-bed.sh status                 lists the bed's namespaces and addresses
#
# PREFIX is $NETNS_BED_PREFIX (default "braid"): a test takes its own so that it cannot tear down someone else's
# bed. The bridge lives in its own namespace PREFIX-br, not in the root one: the root namespace's firewall (e.g.
# Docker's FORWARD DROP with br_netfilter) would otherwise filter the bridged traffic, and nothing of the bed
# shows up among the machine's own interfaces. `up` replaces any bed of the same prefix; callers should
# `trap '... down' EXIT` so that nothing is left behind.
set -Eeuo pipefail

prefix="${NETNS_BED_PREFIX:-braid}"
bridge_ns="${prefix}-br"
subnet="10.77.0"

usage() {
  sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

die() {
  echo "netns-bed: $*" >&2
  exit 1
}

host_ns() { echo "${prefix}-ns$1"; }

# The bed's namespaces: PREFIX-br and PREFIX-nsI, and only those (a prefix "braid" must not catch "braid-unit-7").
bed_namespaces() {
  ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${prefix}-(br|ns[0-9]+)\$" || true
}

# tc tbf wants a bucket of at least one (GSO-sized) packet and enough for the timer's granularity: 4 ms of
# traffic at the rate, at least 64 KiB.
burst_bytes() {
  local rate="$1" num unit bits
  [[ "$rate" =~ ^([0-9]+)([kmgt]?)(bit)?$ ]] || die "--rate '$rate' is not like 100mbit, 10gbit"
  num="${BASH_REMATCH[1]}"
  unit="${BASH_REMATCH[2]}"
  case "$unit" in
    k) bits=$((num * 1000)) ;;
    m) bits=$((num * 1000000)) ;;
    g) bits=$((num * 1000000000)) ;;
    t) bits=$((num * 1000000000000)) ;;
    *) bits=$num ;;
  esac
  local b=$((bits / 8 / 250))
  ((b < 65536)) && b=65536
  echo "$b"
}

shape() {  # shape NS DEV RATE
  ip netns exec "$1" tc qdisc replace dev "$2" root tbf rate "$3" burst "$(burst_bytes "$3")" latency 20ms
}

cmd_down() {
  local ns
  for ns in $(bed_namespaces); do
    # Deleting a namespace deletes its veth ends and with them their peers. A process still inside keeps the
    # namespace alive without its name; the bed is gone all the same.
    ip netns delete "$ns" 2>/dev/null || true
  done
}

cmd_up() {
  [[ $# -ge 1 && "$1" =~ ^[0-9]+$ ]] || usage
  local n="$1" rate="" rails=1
  shift
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --rate) [[ $# -ge 2 ]] || usage; rate="$2"; burst_bytes "$rate" >/dev/null; shift 2 ;;
      --rails) [[ $# -ge 2 && "$2" =~ ^[1-8]$ ]] || die "--rails takes 1..8"; rails="$2"; shift 2 ;;
      *) usage ;;
    esac
  done
  ((n >= 1 && n <= 250)) || die "N=$n: 1..250 hosts fit in ${subnet}.0/24"
  cmd_down
  # A failure half-way leaves a half-built bed: remove it rather than leave pieces behind.
  trap 'cmd_down' ERR
  ip netns add "$bridge_ns"
  ip -n "$bridge_ns" link set lo up
  local i j ns port
  for ((j = 0; j < rails; ++j)); do
    ip -n "$bridge_ns" link add "braid-br$j" type bridge
    ip -n "$bridge_ns" link set "braid-br$j" up
  done
  for ((i = 0; i < n; ++i)); do
    ns="$(host_ns "$i")"
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    for ((j = 0; j < rails; ++j)); do
      port="p$i"
      ((j == 0)) || port="p${i}r$j"
      # Both ends are created inside their namespaces: nothing passes through (or clashes in) the root namespace.
      ip link add "eth$j" netns "$ns" type veth peer name "$port" netns "$bridge_ns"
      ip -n "$bridge_ns" link set "$port" master "braid-br$j"
      ip -n "$bridge_ns" link set "$port" up
      ip -n "$ns" addr add "10.77.$j.$((i + 1))/24" dev "eth$j"
      ip -n "$ns" link set "eth$j" up
      if [[ -n "$rate" ]]; then
        shape "$ns" "eth$j" "$rate"         # what host i sends on rail j
        shape "$bridge_ns" "$port" "$rate"  # what host i receives on it
      fi
    done
  done
  trap - ERR
  echo "netns-bed: ${n} hosts ${prefix}-ns0..$((n - 1)) at ${subnet}.1..${n}${rate:+, ${rate} each way}" \
    "$( ((rails > 1)) && echo "on $rails rails (10.77.0-$((rails - 1)).x)")"
}

cmd_run() {
  [[ $# -ge 3 && "$1" =~ ^[0-9]+$ && "$2" == "--" ]] || usage
  local ns
  ns="$(host_ns "$1")"
  shift 2
  ip netns list | awk '{print $1}' | grep -qx "$ns" || die "no namespace $ns: run '$0 up N' first"
  exec ip netns exec "$ns" "$@"
}

cmd_status() {
  local ns
  for ns in $(bed_namespaces); do
    echo "$ns: $(ip -n "$ns" -4 -o addr show 2>/dev/null | awk '$2 != "lo" {printf "%s %s ", $2, $4}')"
  done
}

[[ $# -ge 1 ]] || usage
[[ $(id -u) -eq 0 ]] || die "needs root (network namespaces)"
command -v ip >/dev/null || die "needs the ip command (iproute2)"
verb="$1"
shift
case "$verb" in
  up) cmd_up "$@" ;;
  down) cmd_down ;;
  run) cmd_run "$@" ;;
  status) cmd_status ;;
  *) usage ;;
esac
