"""torch.distributed over psdp against gloo, in one job: all-reduce bus bandwidth from 1 MiB to 256 MiB, the
time of a DDP training step, and the per-call cost of the psdp backend's Python layer.

    torchrun --standalone --nproc-per-node 2 bindings/python/examples/benchmark_torch.py [--rounds 5] [-J FILE]

The default group runs on psdp ("cpu:psdp"); a gloo group spans the same ranks. Each measurement alternates
the two --rounds times on the same tensors (allocated and touched once) and reports medians; a time is the
slowest rank's. The all-reduce runs on two tensors per size, each over both backends: one from torch's
allocator (on transparent huge pages: THP_MEM_ALLOC_ENABLE=1 is set before torch loads) and one from
psdp.torch.empty (psdp_mem_alloc memory, which psdp's direct collectives read in place).
The DDP step is forward, backward (DDP all-reducing the gradient buckets meanwhile) and SGD, on the examples'
MLP (torch_ddp.py, float64) and on a wider one (8 layers of 1024 x 1024, float32: 32 MiB of gradients), one DDP
instance per backend over the same weights.
Overhead: an 8-byte all_reduce on a group of one rank (no peer to wait for) through the psdp backend's method
and through torch.distributed (whose own dispatch adds its part), each minus the same psdp C call made
directly.
"""

import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")  # read by torch's CPU allocator when torch loads

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

import mlp_data  # noqa: E402
import psdp.torch  # noqa: E402
import torch_ddp  # noqa: E402
from timing import interleaved_medians_us  # noqa: E402

SIZES = [1 << s for s in range(20, 29)]  # 1 MiB .. 256 MiB


def slowest(seconds: float) -> float:
    t = torch.tensor([seconds], dtype=torch.float64)
    dist.all_reduce(t, dist.ReduceOp.MAX)
    return float(t[0])


def timed(call, iters: int, group=None) -> float:
    """Seconds per call of `call`, the slowest rank's, after one untimed call."""
    call()
    dist.barrier(group=group)
    start = time.perf_counter()
    for _ in range(iters):
        call()
    return slowest((time.perf_counter() - start) / iters)


def all_reduce_table(gloo, rounds: int) -> list[dict]:
    """Bus bandwidth (GB/s) of all_reduce per size, over psdp and over gloo, on a tensor of torch's allocator
    and on one of psdp_mem_alloc memory (psdp.torch.empty)."""
    size_w = dist.get_world_size()
    rows = []
    for size in SIZES:
        tensors = {"torch": torch.ones(size // 4), "psdp": psdp.torch.empty(size // 4).fill_(1)}
        iters = max(2, min(20, (64 << 20) // size))
        samples = {(backend, memory): [] for memory in tensors for backend in ("psdp", "gloo")}
        for _ in range(rounds):
            for (backend, memory), times in samples.items():
                tensor, group = tensors[memory], gloo if backend == "gloo" else None
                times.append(timed(lambda: dist.all_reduce(tensor, group=group), iters, group))
        row = {"size": size}
        for (backend, memory), times in samples.items():
            row[f"{backend}, {memory} memory"] = size / statistics.median(times) / 1e9 * 2 * (size_w - 1) / size_w
        rows.append(row)
        del tensors
    return rows


def wide_mlp() -> nn.Module:
    torch.manual_seed(0)
    layers = []
    for _ in range(8):
        layers += [nn.Linear(1024, 1024), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


# name -> (model factory, input features, output features)
DDP_MODELS = {
    "example MLP (torch_ddp.py)": (torch_ddp.make_model, mlp_data.SIZES[0], mlp_data.SIZES[-1]),
    "MLP 8 x 1024 x 1024": (wide_mlp, 1024, 1024),
}


def ddp_step_times(gloo, rounds: int) -> dict[str, dict[str, float]]:
    """Seconds per DDP step (forward, backward, SGD) of each model, over psdp and over gloo."""
    results = {}
    for model_name, (make, inputs, outputs) in DDP_MODELS.items():
        models = {"psdp": DistributedDataParallel(make()), "gloo": DistributedDataParallel(make(), process_group=gloo)}
        optimizers = {name: torch.optim.SGD(m.parameters(), lr=1e-3) for name, m in models.items()}
        dtype = next(models["psdp"].parameters()).dtype
        x, y = torch.randn(32, inputs, dtype=dtype), torch.randn(32, outputs, dtype=dtype)

        def step(name: str) -> None:
            optimizers[name].zero_grad()
            nn.functional.mse_loss(models[name](x), y).backward()
            optimizers[name].step()

        samples = {name: [] for name in models}
        for _ in range(rounds):
            for name in models:
                samples[name].append(timed(lambda: step(name), 5))
        results[model_name] = {name: statistics.median(times) for name, times in samples.items()}
    return results


def overhead_us(rounds: int) -> dict[str, float]:
    """Microseconds per 8-byte all_reduce on a group of this rank alone (so that only the layers are timed,
    not a peer): as a direct C call, through the psdp backend's method, and through torch.distributed (its
    dispatch, then the backend), interleaved."""
    from psdp._library import lib
    from psdp.constants import DType, Op

    alone = [dist.new_group([r], backend="psdp") for r in range(dist.get_world_size())][dist.get_rank()]
    backend = alone._get_backend(torch.device("cpu"))
    handle = backend.communicator._handle_for_call()
    a = torch.ones(2)
    address = a.data_ptr()
    opts = dist.AllreduceOptions()
    opts.asyncOp = False
    return interleaved_medians_us({
        "c": lambda: lib.psdp_all_reduce(address, address, 2, DType.FLOAT32, Op.SUM, handle, None, None),
        "backend": lambda: backend.allreduce([a], opts).wait(),
        "torch": lambda: dist.all_reduce(a, group=alone),
    }, rounds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("-J", "--json", help="also write the results as JSON here (rank 0)")
    args = parser.parse_args()
    dist.init_process_group("cpu:psdp")
    gloo = dist.new_group(backend="gloo")
    rank, size = dist.get_rank(), dist.get_world_size()
    table = all_reduce_table(gloo, args.rounds)
    steps = ddp_step_times(gloo, args.rounds)
    overhead = overhead_us(args.rounds)
    if rank == 0:
        print(f"torch.distributed all_reduce, {size} ranks, float32, busbw GB/s (medians of {args.rounds} "
              f"interleaved runs)")
        print(f"{'':>9} {'torch tensors':>29} {'psdp.torch.empty tensors':>29}")
        print(f"{'size':>9} {'psdp':>8} {'gloo':>8} {'psdp/gloo':>10} {'psdp':>8} {'gloo':>8} {'psdp/gloo':>10}")
        for row in table:
            cells = ""
            for memory in ("torch", "psdp"):
                ours, theirs = row[f"psdp, {memory} memory"], row[f"gloo, {memory} memory"]
                cells += f" {ours:8.2f} {theirs:8.2f} {ours / theirs:10.2f}"
            print(f"{row['size'] >> 20:>6}MiB{cells}")
        for model_name, times in steps.items():
            print(f"DDP step, {model_name}, batch 32: psdp {times['psdp'] * 1e3:.2f} ms, gloo "
                  f"{times['gloo'] * 1e3:.2f} ms, gloo/psdp {times['gloo'] / times['psdp']:.2f}")
        c = overhead["c"]
        print(f"8-byte all_reduce on a group of one rank: {c:.1f} us as a direct C call; through the psdp "
              f"backend {overhead['backend']:.1f} us (+{overhead['backend'] - c:.1f}); through torch.distributed "
              f"{overhead['torch']:.1f} us (+{overhead['torch'] - c:.1f})")
        if args.json:
            with open(args.json, "w") as out:
                json.dump({"all_reduce": table, "ddp_step_s": steps, "overhead_us": overhead}, out, indent=1)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
