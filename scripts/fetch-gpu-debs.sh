#!/usr/bin/env bash
# Run on this (networked) machine before a GPU run: downloads into .debs/ the Debian packages the lent GPU machine
# lacks (it has CUDA, cmake and ninja, but no -dev packages and no network). .debs/ is git-ignored, so pass it to
# the run explicitly (carry: [".debs"]); scripts/gpu-check.sh unpacks it there with dpkg -x, never over /.
# libssl3 comes along because libssl-dev's libcrypto.so is a symlink to it: with it the unpacked tree is complete
# whatever OpenSSL runtime the GPU machine has.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .debs
cd .debs
rm -f ./*.deb
apt-get download libssl-dev libssl3 libgtest-dev googletest libcli11-dev nlohmann-json3-dev
ls -l ./*.deb
