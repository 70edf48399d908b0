"""The model of ddp_train.py trained with FSDP2 (`fully_shard`) over braid: each rank holds a shard of every
parameter, gathers a layer's parameters before using it (all_gather_into_tensor) and reduce-scatters its gradients
(reduce_scatter_tensor).

    torchrun --nproc-per-node 2 examples/fsdp_train.py           # CPU, or one GPU per rank when there are GPUs
    braid run -n 2 -- python examples/fsdp_train.py --steps 20
    mpirun -np 2 python examples/fsdp_train.py

--backend gloo (or nccl) trains the same model with another backend, for comparison. Needs torch >= 2.6.
"""

from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

import braid_torch  # noqa: F401  (registers backend "braid")
from tiny_lm import parse_args, start, train


def main():
    args = parse_args(__doc__)
    rank, world, _, device, model = start(args)
    mesh = init_device_mesh(device.type, (world,))
    for layer in model.blocks.layers:  # one unit per transformer block, then the rest
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    train(model, args, rank, device, f"{args.backend}, FSDP2")


if __name__ == "__main__":
    main()
