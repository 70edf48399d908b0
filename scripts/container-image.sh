#!/usr/bin/env bash
# Builds the CPU variant of the braid image from docker/Dockerfile (the same recipe as the GPU image, on a
# Debian 12 base made here with debootstrap, no registry needed) with podman, runs braid's unit tests in the build
# stage and a verified `braid bench` through the entrypoint in the final image, and prints the image's size.
# Run as root on Debian 12. The base is cached as an OCI archive in BRAID_IMAGE_CACHE (~/.cache/braid/images).
# MIRROR, when set, is the Debian archive debootstrap fetches the base from (a local mirror or caching proxy); unset,
# debootstrap's own default applies. Either way the base's apt sources name that archive, and http_proxy is honoured.
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${BRAID_IMAGE_CACHE:-$HOME/.cache/braid/images}
mkdir -p "$cache"

packages=(podman buildah runc debootstrap skopeo)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# podman's default runtime (crun) fails on this kernel's hybrid cgroups, and its default rlimits are refused here.
cat >"$cache/containers.conf" <<'CONF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
CONF
export CONTAINERS_CONF=$cache/containers.conf

base=localhost/braid-debian:bookworm
if ! podman image exists "$base"; then
  if [ -f "$cache/debian-bookworm.tar" ]; then
    podman load -q -i "$cache/debian-bookworm.tar" >/dev/null
    podman tag "$(podman images -q | head -1)" "$base"
  else
    root=$(mktemp -d)
    debootstrap --variant=minbase bookworm "$root" ${MIRROR:+"$MIRROR"} >/dev/null
    tar -C "$root" -c . | podman import - "$base" >/dev/null
    rm -rf "$root"
    skopeo copy -q "containers-storage:$base" "oci-archive:$cache/debian-bookworm.tar"
  fi
fi

args=(--network host -f docker/Dockerfile --build-arg "BUILD_BASE=$base" --build-arg "RUN_BASE=$base"
  --build-arg BRAID_WITH_CUDA=OFF --build-arg WITH_TORCH=0)
echo "== build stage (with braid's tests)"
podman build -q "${args[@]}" --build-arg BRAID_BUILD_TESTS=ON --target build -t braid-build:cpu . >/dev/null
podman run --rm braid-build:cpu bash -c \
  'set -o pipefail; cd /build && ctest -L unit -j "$(nproc)" --timeout 600 | grep -E "tests passed|tests failed|Skipped|Failed"'
echo "== final image"
podman build -q "${args[@]}" --build-arg BRAID_BUILD_TESTS=ON -t braid:cpu . >/dev/null
podman run --rm --shm-size 1g braid:cpu braid bench allreduce -b 8 -e 16M -f 4 -n 10 -w 3 -c 1 --nranks 2
echo "== braid:cpu is $(podman image inspect braid:cpu --format '{{.Size}}' | numfmt --to=iec) (runtime stage only)"
