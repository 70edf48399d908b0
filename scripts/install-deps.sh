#!/usr/bin/env bash
# Installs what braid needs to build and test on Debian 12 (run as root). Skips what is already there.
set -euo pipefail
packages=(build-essential cmake ninja-build pkg-config libssl-dev libgtest-dev libcli11-dev nlohmann-json3-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
