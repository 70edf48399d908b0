"""A small transformer language model trained with DDP over braid, on synthetic tokens.

    torchrun --nproc-per-node 2 examples/ddp_train.py            # CPU, or one GPU per rank when there are GPUs
    braid run -n 2 -- python examples/ddp_train.py --steps 20
    mpirun -np 2 python examples/ddp_train.py                     # Open MPI (braid reads OMPI_COMM_WORLD_*)

--backend gloo (or nccl) trains the same model with another backend, for comparison: with the same seed the losses
agree step by step (to float rounding).
"""

from torch.nn.parallel import DistributedDataParallel as DDP

import braid_torch  # noqa: F401  (registers backend "braid")
from tiny_lm import parse_args, start, train


def main():
    args = parse_args(__doc__)
    rank, _, local, device, model = start(args)
    ddp = DDP(model, device_ids=[local] if device.type == "cuda" else None)
    train(ddp, args, rank, device, args.backend)


if __name__ == "__main__":
    main()
