#!/usr/bin/env python3
"""PyTorch's gloo backend measured as psdp-perf measures psdp: one collective, float32 sum, sizes from --min
to --max doubling (bytes of the whole buffer), --warmup untimed and --iters timed calls per size, the time of
a size the slowest rank's mean (an all-reduce MAX of the ranks' times), busbw by nccl-tests' factors.
torch's all_reduce works in place; reduce_scatter_tensor and all_gather_into_tensor out of place.

Run one process per rank under a launcher that sets PSDP_RANK and PSDP_WORLD_SIZE (psdp-run):

    psdp-run -n 2 -- VENV/bin/python perf/compare/gloo_coll_bench.py ar --min 1M --max 256M --json gloo.json

Writes {"collective", "nranks", "results": [{"size", "busbw"}]} to --json (rank 0). Used by run_compare.py
where torch is importable (--gloo-python)."""
import argparse
import json
import os
import time

import torch
import torch.distributed as dist

def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1].upper()] if text[-1:].upper() in units else int(text)


FACTORS = {"ar": lambda n: 2 * (n - 1) / n, "rs": lambda n: (n - 1) / n, "ag": lambda n: (n - 1) / n}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("collective", choices=sorted(FACTORS))
    p.add_argument("--min", type=parse_size, default=1 << 20, help="bytes of the whole buffer (K/M/G)")
    p.add_argument("--max", type=parse_size, default=256 << 20)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--port", type=int, default=29700, help="the TCP store's port on 127.0.0.1")
    p.add_argument("--json")
    args = p.parse_args()
    rank, world = int(os.environ["PSDP_RANK"]), int(os.environ["PSDP_WORLD_SIZE"])
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}", rank=rank, world_size=world)
    torch.set_num_threads(1)
    # Buffers made once at the largest size and written through, as psdp-perf's: no first touch is timed.
    count_max = args.max // 4
    send = torch.ones(count_max, dtype=torch.float32)
    recv = torch.zeros(count_max, dtype=torch.float32)
    results = []
    size = args.min
    while size <= args.max:
        count = size // 4
        block = count // world

        def call():
            if args.collective == "ar":
                dist.all_reduce(send[:count])
            elif args.collective == "rs":
                dist.reduce_scatter_tensor(recv[:block], send[:block * world])
            else:
                dist.all_gather_into_tensor(recv[:block * world], send[:block])

        for _ in range(args.warmup):
            call()
        dist.barrier()
        start = time.perf_counter()
        for _ in range(args.iters):
            call()
        elapsed = torch.tensor([(time.perf_counter() - start) / args.iters], dtype=torch.float64)
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
        busbw = size / elapsed.item() / 1e9 * FACTORS[args.collective](world)
        results.append({"size": size, "busbw": busbw})
        if rank == 0:
            print(f"{size:>12} {elapsed.item() * 1e6:12.1f} us {busbw:8.2f} GB/s", flush=True)
        # all_reduce sums in place: start every size from ones again so that values stay finite.
        send.fill_(1.0)
        size *= 2
    if rank == 0 and args.json:
        with open(args.json, "w") as f:
            json.dump({"collective": args.collective, "nranks": world, "results": results}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
