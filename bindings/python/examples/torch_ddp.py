"""Data-parallel training with PyTorch DDP over the psdp backend, checked against a single process.

    torchrun --standalone --nproc-per-node 2 bindings/python/examples/torch_ddp.py

Every rank trains the MLP of mlp_data.py on its share of each global batch, DDP averaging the gradients with
psdp's all-reduce; rank 0 also trains the same model on the whole batches alone and prints both loss curves,
which must agree (to float64 rounding: the sums run in another order). --backend gloo runs the same over gloo.
Exit status 1 if the curves differ.
"""

import argparse
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel

import mlp_data


def make_model() -> nn.Module:
    layers: list[nn.Module] = []
    for i, (weight, bias) in enumerate(mlp_data.initial_weights()):
        linear = nn.Linear(*weight.shape).double()
        with torch.no_grad():
            linear.weight.copy_(torch.from_numpy(weight.T))
            linear.bias.copy_(torch.from_numpy(bias))
        layers.append(linear)
        if i < len(mlp_data.SIZES) - 2:
            layers.append(nn.Tanh())
    return nn.Sequential(*layers)


def train(model: nn.Module, rank: int, size: int, group=None) -> list[float]:
    """The loss of the global batch at every step (each rank's share averaged over the group)."""
    optimizer = torch.optim.SGD(model.parameters(), lr=mlp_data.LEARNING_RATE)
    losses = []
    for step in range(mlp_data.STEPS):
        x, y = (torch.from_numpy(mlp_data.shard(a, rank, size)) for a in mlp_data.batch(step))
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        if group is not None:
            loss = loss.detach().clone()
            dist.all_reduce(loss, group=group)  # a sum: gloo has no average
            loss /= size
        losses.append(loss.item())
    return losses


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="psdp", help="torch.distributed backend (default psdp)")
    args = parser.parse_args()
    dist.init_process_group(args.backend)
    rank, size = dist.get_rank(), dist.get_world_size()
    distributed = train(DistributedDataParallel(make_model()), rank, size, group=dist.group.WORLD)
    ok = True
    if rank == 0:
        single = train(make_model(), 0, 1)
        ok = mlp_data.report(f"torch DDP over {args.backend} on {size} ranks", distributed, single, 1e-9)
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
