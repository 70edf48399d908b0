"""braid's torch.distributed backend.

    import braid_torch  # registers backend "braid" for CPU and CUDA tensors
    torch.distributed.init_process_group(backend="braid")

The process group meets its peers through the store torch.distributed passes in (no second port), and every
collective takes CPU or CUDA tensors alike: braid looks at each tensor's memory.
"""

import torch
import torch.distributed as dist

from . import _C

__all__ = ["BACKEND_NAME", "abort", "shutdown"]

BACKEND_NAME = "braid"


def _create_backend(store, rank, size, timeout):
    return _C.create_backend(store, rank, size, timeout)


def _backend_of(group):
    group = group if group is not None else dist.group.WORLD
    return group._get_backend(torch.device("cpu"))


def abort(group=None):
    """Ends the pending ops of `group`'s braid backend (default: the world) at once with Aborted, as
    Backend.abort() does from torch 2.7 on; this works on every torch braid_torch supports."""
    _C.abort(_backend_of(group))


def shutdown(group=None):
    """Lets `group`'s queued ops finish, then frees its braid communicator; later ops fail naming the shutdown
    (Backend.shutdown() from torch 2.7 on, which destroy_process_group calls)."""
    _C.shutdown(_backend_of(group))


def _coalesce_cpu_batches_before_torch_2_7():
    # Before torch 2.7, batch_isend_irecv coalesces only CUDA ops and posts CPU ones one by one, each a Work of its
    # own; braid runs those in issue order, so a ring of large sends would wait on receives queued behind them.
    # For braid's groups this posts CPU batches inside a coalescing region too, as torch 2.7 and later do: one braid
    # group, whatever order the ranks listed their ops in. Other backends' batches go to torch's own function.
    if torch.torch_version.TorchVersion(torch.__version__) >= (2, 7):
        return
    from torch.distributed import distributed_c10d as c10d

    original = c10d.batch_isend_irecv
    if getattr(original, "_braid_coalesces_cpu", False):
        return

    def batch_isend_irecv(p2p_op_list):
        if not p2p_op_list or p2p_op_list[0].tensor.device.type != "cpu":
            return original(p2p_op_list)
        group = p2p_op_list[0].group
        if dist.get_backend(group) != BACKEND_NAME:
            return original(p2p_op_list)
        c10d._check_p2p_op_list(p2p_op_list)
        with c10d._coalescing_manager(group, p2p_op_list[0].tensor.device, async_ops=True) as cm:
            for op in p2p_op_list:
                op.op(op.tensor, op.peer, op.group, op.tag)
        return cm.works

    batch_isend_irecv._braid_coalesces_cpu = True
    batch_isend_irecv.__doc__ = original.__doc__
    c10d.batch_isend_irecv = batch_isend_irecv
    dist.batch_isend_irecv = batch_isend_irecv


def _register():
    # Idempotent: importing twice (or from two modules) must not raise "already registered".
    if BACKEND_NAME.upper() in getattr(dist.Backend, "backend_list", []) or hasattr(dist.Backend, BACKEND_NAME.upper()):
        return
    dist.Backend.register_backend(BACKEND_NAME, _create_backend, devices=["cpu", "cuda"])


_register()
_coalesce_cpu_batches_before_torch_2_7()
