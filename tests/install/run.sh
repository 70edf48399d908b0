#!/usr/bin/env bash
# Installs the build in $1 into a scratch prefix, then builds and runs a consumer with find_package(braid) and
# another with pkg-config. Usage: run.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$src/tests/install" -B "$work/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
LD_LIBRARY_PATH="$work/prefix/lib:${LD_LIBRARY_PATH:-}" "$work/consumer/consumer_shared"
"$work/consumer/consumer_static"
libdir=$(ls -d "$work"/prefix/lib*/pkgconfig | head -1)
flags=$(PKG_CONFIG_PATH="$libdir" pkg-config --cflags --libs braid)
c++ -std=c++20 "$src/tests/install/consumer.cpp" $flags -o "$work/consumer_pc"
LD_LIBRARY_PATH="$(dirname "$libdir"):${LD_LIBRARY_PATH:-}" "$work/consumer_pc"
echo "install test passed"
