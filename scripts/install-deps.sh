#!/usr/bin/env bash
# Installs what braid needs to build and test on Debian 12 (run as root). Skips what is already there.
set -euo pipefail
# Build: compiler, CMake, OpenSSL, hwloc (the host's CPUs, caches, NUMA nodes and PCI tree), and the header-only CLI11
# and nlohmann-json; tests: GoogleTest; the peers that `braid bench --compare` runs: Gloo and Open MPI; `--plot`:
# gnuplot; the PyTorch backend (python/): a venv and Python's headers (torch itself comes from PyPI, see
# scripts/torch-env.sh); clang: the fuzz harnesses (libFuzzer); bats and shellcheck: the tests of the image's
# entrypoint; iproute2 (ip, tc): the network-namespace hosts of the netns_* tests (scripts/netns-bed.sh), which are
# skipped without it. The bed's veth and bridge devices need no package: the kernel has them built in or autoloads
# them (a modular Debian kernel brings kmod; a container has its host's).
packages=(build-essential cmake ninja-build pkg-config libssl-dev libhwloc-dev libgtest-dev libcli11-dev
  nlohmann-json3-dev libgloo-dev libopenmpi-dev openmpi-bin gnuplot-nox python3 python3-venv python3-dev clang bats
  shellcheck iproute2)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
