#!/usr/bin/env bash
# The Python environment of braid's PyTorch backend: a venv with torch (PyPI's, a large CUDA build: made once and
# reused), pytest and ninja, then braid_torch built against that torch from this checkout's libbraid. Prints the
# venv's python on its last line.
#   BRAID_TORCH_VENV  where the venv lives (default ~/.cache/braid/torch-venv)
#   BRAID_BUILD_DIR   the CMake build whose libbraid.a the extension links (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${BRAID_TORCH_VENV:-$HOME/.cache/braid/torch-venv}
# The torch the tests pin: its libtorch_cuda.so's NCCL imports are what scripts/nccl-torch-check.sh holds braid's
# libnccl.so.2 to, and a new torch may import more. Raise it on purpose, with that check passing.
torch_version=2.15.0
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import torch" 2>/dev/null; then
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
fi
if [ "$("$venv/bin/python" -c 'import torch; print(torch.__version__.split("+")[0])' 2>/dev/null)" != "$torch_version" ]; then
  "$venv/bin/pip" install -q "torch==$torch_version" pytest ninja numpy setuptools >&2
fi
"$venv/bin/python" -c "import pytest, ninja, setuptools" 2>/dev/null || "$venv/bin/pip" install -q pytest ninja numpy setuptools >&2
# The extension is rebuilt every time: it must match this checkout's libbraid.
BRAID_BUILD_DIR=${BRAID_BUILD_DIR:-build} MAX_JOBS=$(nproc) \
  "$venv/bin/pip" install -q --no-build-isolation --force-reinstall --no-deps ./python >&2
echo "$venv/bin/python"
