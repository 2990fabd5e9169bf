"""psdp.torch: psdp as a torch.distributed backend, named "psdp", for CPU tensors.

    import torch.distributed as dist
    dist.init_process_group("psdp")   # under torchrun; or "cpu:psdp", or "cpu:psdp,cuda:nccl"

Installing the bindings registers the backend with torch through the "torch.distributed.backends" entry point,
so scripts need not import this module; importing it registers it too. The backend is Python over the psdp
bindings (a subclass of torch's c10d Backend): no compiled extension is tied to one torch build.

Rank 0 creates the psdp rendezvous and passes its unique id to the others through torch's store. The group's
timeout (init_process_group(timeout=...)) bounds every psdp call, unless PSDP_TIMEOUT is set; the other
PSDP_* variables configure the communicator as usual.

What it runs: all_reduce, reduce, broadcast, barrier, all_gather (list, also of uneven sizes),
all_gather_into_tensor, reduce_scatter (list, also uneven), reduce_scatter_tensor, gather, scatter,
all_to_all_single (even or with split sizes), all_to_all, send and recv (tag 0; messages between two ranks match
in posting order), and the object collectives torch builds on them. Ops: SUM, PRODUCT, MIN, MAX, AVG and
PREMUL_SUM; not the bitwise ones. Tensors: dense, contiguous, on the CPU; any dtype for the calls that move
data, psdp's dtypes (and complex for SUM, AVG and PREMUL_SUM) for reductions.

`psdp.torch.empty(size, dtype=)` makes CPU tensors on psdp_mem_alloc memory, which psdp's collectives on one
host read in place: faster for buffers allocated once and communicated often.
"""

from __future__ import annotations

import torch.distributed as dist

from .backend import BACKEND_NAME, PsdpBackend
from .memory import empty
from .work import Work


def _create(options, backend_options) -> PsdpBackend:
    return PsdpBackend.from_store(options.store, options.group_rank, options.group_size, options.timeout)


def register_backend() -> None:
    """Registers "psdp" with torch.distributed (idempotent); the entry point torch calls."""
    if BACKEND_NAME.upper() not in dist.Backend._plugins:
        dist.Backend.register_backend(BACKEND_NAME, _create, extended_api=True, devices=["cpu"])


register_backend()

__all__ = ["BACKEND_NAME", "PsdpBackend", "Work", "empty", "register_backend"]
