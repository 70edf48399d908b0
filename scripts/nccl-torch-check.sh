#!/usr/bin/env bash
# braid's libnccl.so.2 for the NCCL that PyPI's torch bundles: builds nccl/ on its own against this checkout's braid
# (installed from the build into a scratch prefix) and the nccl.h of torch's nvidia-nccl wheel, then checks that
#   - it exports every function of that header and every nccl* symbol torch's libtorch_cuda.so imports;
#   - the C API test (tests/nccl/nccl_api_test.c, compiled against that header) passes on it;
#   - torch loads with it preloaded, and NCCL's entry points it calls are braid's;
#   - where there is a GPU, PyTorch's own NCCL backend runs on it (tests/torch/test_nccl_library.py; skipped
#     without one).
# Usage: scripts/nccl-torch-check.sh PYTHON   (the torch venv's python: scripts/torch-env.sh prints it)
#   BRAID_BUILD_DIR: the build it installs braid from (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
python=${1:?usage: scripts/nccl-torch-check.sh PYTHON}
build=${BRAID_BUILD_DIR:-build}
if [ ! -d "$build/nccl" ] || ! grep -q "braid_nccl" "$build/build.ninja" 2>/dev/null; then
  echo "nccl-torch-check: $build has no braid_nccl (a build without CUDA): nothing to check"
  exit 0
fi
torch=$("$python" -c 'import torch; print(torch.__version__)')
site=$("$python" -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))')
header=$site/nvidia/nccl/include
importer=$site/torch/lib/libtorch_cuda.so
if [ ! -f "$header/nccl.h" ] || [ ! -f "$importer" ]; then
  echo "nccl-torch-check: torch $torch bundles no NCCL (no nccl.h or libtorch_cuda.so): nothing to check"
  exit 0
fi
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
work=$(cd "$build" && pwd)/nccl-torch  # absolute: CMake reads a relative prefix path from its own build directory
rm -rf "$work"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S nccl -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DBRAID_NCCL_INCLUDE_DIR="$header" >"$work/configure.log"
cmake --build "$work/build" -j "$(nproc)" >"$work/build.log"
python3 scripts/nccl-symbols.py --header "$header/nccl.h" --library "$work/build/libbraid_nccl.so" \
  --importer "$importer"
"$work/build/braid_nccl_api_test" 3
"$work/build/braid_nccl_api_test" --one-thread 3
"$work/build/braid_nccl_api_test" --grow 3
# torch's own references to NCCL resolve to the first definition the loader finds: braid's, when preloaded. Its
# error strings name BRAID_LOG where NCCL's name NCCL_DEBUG.
LD_PRELOAD=$work/build/libnccl.so.2 "$python" - <<'PY'
import ctypes
import torch

text = ctypes.CDLL(None).ncclGetErrorString
text.restype = ctypes.c_char_p
answer = text(1).decode()
assert "BRAID_LOG" in answer, f"ncclGetErrorString is not braid's: {answer!r}"
print(f"nccl-torch-check: torch {torch.__version__} loads braid's libnccl.so.2, NCCL "
      f"{'.'.join(map(str, torch.cuda.nccl.version()))} by its ABI")
PY
# PyTorch's backend="nccl" on braid: collectives against Gloo, DDP, a killed rank, the process group's timeout.
BRAID_NCCL_PRELOAD=$work/build/libnccl.so.2 NCCL_NVLS_ENABLE=0 "$python" -m pytest -q -p no:cacheprovider \
  tests/torch/test_nccl_library.py
