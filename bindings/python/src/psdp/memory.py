"""`HostMemory`: host memory from psdp_mem_alloc, which psdp's collectives on one host read in place."""

from __future__ import annotations

import ctypes
import operator
import weakref

from ._check import check
from ._library import lib


class HostMemory:
    """`nbytes` of host memory from psdp_mem_alloc: page aligned, zeroed, every page already touched.

    On one host, collectives above the small-message size read the other ranks' buffers directly; buffers in
    this memory they map and read in place, where private memory costs a copy through the kernel (CMA) first:
    the difference between `psdp-perf -R 1` and `-R 0`. Allocate it once and reuse it (each allocation is a
    shared-memory file of its own).

    `buffer()` gives a writable ctypes byte array over it, for numpy.frombuffer, torch.frombuffer or
    memoryview. The memory is freed (psdp_mem_free) once this object and every array made from it are gone.
    """

    def __init__(self, nbytes: int) -> None:
        nbytes = operator.index(nbytes)
        if nbytes <= 0:
            raise ValueError(f"nbytes: {nbytes}; psdp_mem_alloc needs at least one byte")
        pointer = ctypes.c_void_p()
        check(lib.psdp_mem_alloc(ctypes.byref(pointer), nbytes), None)
        self.address: int = pointer.value or 0
        self.nbytes = nbytes
        weakref.finalize(self, lib.psdp_mem_free, self.address)

    def buffer(self) -> ctypes.Array:
        """The memory as a ctypes array of nbytes chars; the array keeps the memory alive."""
        block = (ctypes.c_char * self.nbytes).from_address(self.address)
        block._psdp_memory = self  # type: ignore[attr-defined]
        return block

    def __repr__(self) -> str:
        return f"<psdp.HostMemory {self.nbytes} bytes at {self.address:#x}>"
