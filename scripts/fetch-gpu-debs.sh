#!/usr/bin/env bash
# Run on this (networked) machine before a GPU run (scripts/fetch-gpu-debs.sh [--net]): downloads into .debs/ the Debian packages the lent GPU machine
# lacks (it has CUDA, cmake and ninja, but no -dev packages and no network). .debs/ is git-ignored, so pass it to
# the run explicitly (carry: [".debs"]); scripts/gpu-check.sh unpacks it there with dpkg -x, never over /.
# libssl3 comes along because libssl-dev's libcrypto.so is a symlink to it: with it the unpacked tree is complete
# whatever OpenSSL runtime the GPU machine has. libhwloc15 and the libudev1 it links: hwloc reads the host (src/topology).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .debs
cd .debs
rm -f ./*.deb
# Gloo and what libgloo0 links (hiredis, verbs, netlink): braid-bench-gloo for the namespace bench (gpu-check.sh's
# netns-bench stage).
apt-get download libssl-dev libssl3 libhwloc-dev libhwloc15 libudev1 libgtest-dev googletest libcli11-dev nlohmann-json3-dev \
  libgloo-dev libgloo0 libhiredis0.14 libibverbs1 libnl-3-200 libnl-route-3-200
ls -l ./*.deb
# --net: iproute2 and the libraries it links, into .netdebs/ (unpacked by the netns-bench stage only where the
# machine has no `ip`; kept apart from .debs/, whose libraries every stage sees).
if [[ ${1:-} == --net ]]; then
  mkdir -p ../.netdebs
  cd ../.netdebs
  rm -f ./*.deb
  apt-get download iproute2 libbpf1 libbsd0 libcap2 libdb5.3 libelf1 libmnl0 libtirpc3 libxtables12 libmd0 \
    libgssapi-krb5-2 libkrb5-3 libk5crypto3 libkrb5support0 libkeyutils1 libcom-err2
  ls -l ./*.deb
fi
