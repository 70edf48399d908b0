"""braid's torch.distributed backend.

    import braid_torch  # registers backend "braid" for CPU and CUDA tensors
    torch.distributed.init_process_group(backend="braid")

The process group meets its peers through the store torch.distributed passes in (no second port), and every
collective takes CPU or CUDA tensors alike: braid looks at each tensor's memory.
"""

import torch
import torch.distributed as dist

from . import _C

__all__ = ["BACKEND_NAME"]

BACKEND_NAME = "braid"


def _create_backend(store, rank, size, timeout):
    return _C.create_backend(store, rank, size, timeout)


def _register():
    # Idempotent: importing twice (or from two modules) must not raise "already registered".
    if BACKEND_NAME.upper() in getattr(dist.Backend, "backend_list", []) or hasattr(dist.Backend, BACKEND_NAME.upper()):
        return
    dist.Backend.register_backend(BACKEND_NAME, _create_backend, devices=["cpu", "cuda"])


_register()
