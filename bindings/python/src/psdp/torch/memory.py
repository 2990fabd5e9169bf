"""`empty`: CPU tensors on psdp_mem_alloc memory (psdp.HostMemory), which psdp's collectives on one host read
in place."""

from __future__ import annotations

import math

import torch

from ..memory import HostMemory


def empty(*size: int | tuple[int, ...] | torch.Size, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """An uninitialised (in fact zeroed) CPU tensor of `size` on psdp_mem_alloc memory, as torch.empty makes
    one: for buffers a job allocates once and communicates often (flat gradient or parameter buffers), on
    which the psdp backend's collectives on one host run faster than on torch's own allocations. The memory
    is freed once the tensor and every view of it are gone."""
    shape = torch.Size(size[0] if len(size) == 1 and not isinstance(size[0], int) else size)
    count = math.prod(shape)
    if count == 0:
        return torch.empty(shape, dtype=dtype)
    itemsize = torch.empty(0, dtype=dtype).element_size()
    block = HostMemory(count * itemsize).buffer()
    return torch.frombuffer(block, dtype=dtype, count=count).view(shape)
