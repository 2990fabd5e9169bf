"""The collective and point-to-point calls of a Communicator: each checks its buffers against the sizes
psdp.h describes, then makes the C call blocking or with a request.

Size checks are local: a buffer too small for what psdp would read or write is refused here, since psdp
cannot see a buffer's size. What must agree across ranks (count, dtype, op, root) psdp itself checks, and
a call that differs between ranks raises MismatchError on every rank.
"""

from __future__ import annotations

import ctypes
import operator
from collections.abc import Callable, Sequence

from ._library import lib
from .buffers import ResolvedBuffer, resolve
from .constants import DType, Op
from .premul_sum import PremulSumOp
from .request import Request

OpLike = Op | int | PremulSumOp
RequestPointer = object  # ctypes.byref(handle) or None


def _op_value(op: OpLike) -> int:
    try:
        return operator.index(op)
    except TypeError:
        raise TypeError(f"op: expected a psdp.Op, an int or a PremulSumOp, got {type(op).__name__}") from None


def _same_dtype(buffers: dict[str, ResolvedBuffer | None]) -> DType:
    dtype = None
    for buffer in buffers.values():
        if buffer is None:
            continue
        if dtype is None:
            dtype = buffer.dtype
        elif buffer.dtype is not dtype:
            described = ", ".join(f"{name} is {b.dtype.name.lower()}" for name, b in buffers.items() if b is not None)
            raise TypeError(f"buffers of one call must have one dtype: {described}")
    assert dtype is not None, "every call has a buffer"
    return dtype


def _expect_count(buffer: ResolvedBuffer | None, expected: int, name: str, why: str) -> None:
    if buffer is not None and buffer.count != expected:
        raise ValueError(f"{name} holds {buffer.count} elements; {why} needs {expected}")


def _address(buffer: ResolvedBuffer | None) -> int | None:
    return None if buffer is None else buffer.address


def _counts_array(counts: Sequence[int], size: int) -> ctypes.Array:
    counts = [operator.index(c) for c in counts]
    if len(counts) != size:
        raise ValueError(f"recvcounts has {len(counts)} entries; the communicator has {size} ranks")
    if any(c < 0 for c in counts):
        raise ValueError(f"recvcounts {counts} has a negative entry")
    return (ctypes.c_size_t * size)(*counts)


class Collectives:
    """The communication calls. Every one takes `blocking` (default True): blocking calls return None once
    this rank's result is in place; blocking=False returns a psdp.Request at once. Buffers are numpy arrays,
    DLPack tensors or capsules, or psdp.RawBuffer (see psdp.buffers); `dtype` overrides their element type."""

    rank: int
    size: int

    # Provided by Communicator: the live handle (or InvalidUsageError), and the blocking or nonblocking call.
    def _handle_for_call(self) -> int:
        raise NotImplementedError

    def _run(self, call: Callable[[RequestPointer], int], buffers: list[ResolvedBuffer | None],
             blocking: bool) -> Request | None:
        raise NotImplementedError

    @staticmethod
    def _in(obj: object, name: str, dtype: DType | None) -> ResolvedBuffer:
        return resolve(obj, name, False, dtype)

    @staticmethod
    def _out(obj: object, name: str, dtype: DType | None) -> ResolvedBuffer:
        return resolve(obj, name, True, dtype)

    def all_reduce(self, sendbuf: object, recvbuf: object, op: OpLike = Op.SUM, *, dtype: DType | None = None,
                   blocking: bool = True) -> Request | None:
        """recvbuf = the reduction of every rank's sendbuf (in place: pass the same array twice)."""
        comm = self._handle_for_call()
        send, recv = self._in(sendbuf, "sendbuf", dtype), self._out(recvbuf, "recvbuf", dtype)
        dt, opv = _same_dtype({"sendbuf": send, "recvbuf": recv}), _op_value(op)
        _expect_count(recv, send.count, "recvbuf", "all_reduce of sendbuf's count")
        return self._run(lambda req: lib.psdp_all_reduce(send.address, recv.address, send.count, dt, opv, comm,
                                                        None, req), [send, recv], blocking)

    def reduce_scatter(self, sendbuf: object, recvbuf: object, op: OpLike = Op.SUM, *, dtype: DType | None = None,
                       blocking: bool = True) -> Request | None:
        """sendbuf holds size * n elements; recvbuf (n) receives the reduction of block `rank`."""
        comm = self._handle_for_call()
        send, recv = self._in(sendbuf, "sendbuf", dtype), self._out(recvbuf, "recvbuf", dtype)
        dt, opv = _same_dtype({"sendbuf": send, "recvbuf": recv}), _op_value(op)
        _expect_count(send, self.size * recv.count, "sendbuf", f"reduce_scatter into {recv.count} per rank")
        return self._run(lambda req: lib.psdp_reduce_scatter(send.address, recv.address, recv.count, dt, opv, comm,
                                                            None, req), [send, recv], blocking)

    def all_gather(self, sendbuf: object, recvbuf: object, *, dtype: DType | None = None,
                   blocking: bool = True) -> Request | None:
        """sendbuf holds n elements; recvbuf receives size * n, rank r's at offset r * n."""
        comm = self._handle_for_call()
        send, recv = self._in(sendbuf, "sendbuf", dtype), self._out(recvbuf, "recvbuf", dtype)
        dt = _same_dtype({"sendbuf": send, "recvbuf": recv})
        _expect_count(recv, self.size * send.count, "recvbuf", f"all_gather of {send.count} per rank")
        return self._run(lambda req: lib.psdp_all_gather(send.address, recv.address, send.count, dt, comm, None,
                                                        req), [send, recv], blocking)

    def broadcast(self, sendbuf: object | None, recvbuf: object, root: int = 0, *, dtype: DType | None = None,
                  blocking: bool = True) -> Request | None:
        """The root's sendbuf lands in every rank's recvbuf. sendbuf is read on the root only (None elsewhere)."""
        comm = self._handle_for_call()
        root = operator.index(root)
        send = None if sendbuf is None else self._in(sendbuf, "sendbuf", dtype)
        recv = self._out(recvbuf, "recvbuf", dtype)
        dt = _same_dtype({"sendbuf": send, "recvbuf": recv})
        _expect_count(send, recv.count, "sendbuf", "broadcast into recvbuf's count")
        return self._run(lambda req: lib.psdp_broadcast(_address(send), recv.address, recv.count, dt, root, comm,
                                                       None, req), [send, recv], blocking)

    def barrier(self, *, blocking: bool = True) -> Request | None:
        """Completes once every rank has entered it."""
        comm = self._handle_for_call()
        return self._run(lambda req: lib.psdp_barrier(comm, req), [], blocking)

    def reduce(self, sendbuf: object, recvbuf: object | None, op: OpLike = Op.SUM, root: int = 0, *,
               dtype: DType | None = None, blocking: bool = True) -> Request | None:
        """The reduction of every rank's sendbuf lands in the root's recvbuf (None on the other ranks)."""
        comm = self._handle_for_call()
        root = operator.index(root)
        send = self._in(sendbuf, "sendbuf", dtype)
        recv = None if recvbuf is None else self._out(recvbuf, "recvbuf", dtype)
        dt, opv = _same_dtype({"sendbuf": send, "recvbuf": recv}), _op_value(op)
        _expect_count(recv, send.count, "recvbuf", "reduce of sendbuf's count")
        return self._run(lambda req: lib.psdp_reduce(send.address, _address(recv), send.count, dt, opv, root, comm,
                                                    None, req), [send, recv], blocking)

    def gather(self, sendbuf: object, recvbuf: object | None, root: int = 0, *, dtype: DType | None = None,
               blocking: bool = True) -> Request | None:
        """Every rank's sendbuf (n) lands in the root's recvbuf (size * n; None on the other ranks)."""
        comm = self._handle_for_call()
        root = operator.index(root)
        send = self._in(sendbuf, "sendbuf", dtype)
        recv = None if recvbuf is None else self._out(recvbuf, "recvbuf", dtype)
        dt = _same_dtype({"sendbuf": send, "recvbuf": recv})
        _expect_count(recv, self.size * send.count, "recvbuf", f"gather of {send.count} per rank")
        return self._run(lambda req: lib.psdp_gather(send.address, _address(recv), send.count, dt, root, comm, None,
                                                    req), [send, recv], blocking)

    def scatter(self, sendbuf: object | None, recvbuf: object, root: int = 0, *, dtype: DType | None = None,
                blocking: bool = True) -> Request | None:
        """Block r of the root's sendbuf (size * n; None on the other ranks) lands in rank r's recvbuf (n)."""
        comm = self._handle_for_call()
        root = operator.index(root)
        send = None if sendbuf is None else self._in(sendbuf, "sendbuf", dtype)
        recv = self._out(recvbuf, "recvbuf", dtype)
        dt = _same_dtype({"sendbuf": send, "recvbuf": recv})
        _expect_count(send, self.size * recv.count, "sendbuf", f"scatter of {recv.count} per rank")
        return self._run(lambda req: lib.psdp_scatter(_address(send), recv.address, recv.count, dt, root, comm,
                                                     None, req), [send, recv], blocking)

    def all_to_all(self, sendbuf: object, recvbuf: object, *, dtype: DType | None = None,
                   blocking: bool = True) -> Request | None:
        """Block r of sendbuf goes to rank r; block r of recvbuf comes from rank r (size * n elements each)."""
        comm = self._handle_for_call()
        send, recv = self._in(sendbuf, "sendbuf", dtype), self._out(recvbuf, "recvbuf", dtype)
        dt = _same_dtype({"sendbuf": send, "recvbuf": recv})
        if send.count % self.size:
            raise ValueError(f"sendbuf holds {send.count} elements; all_to_all needs a multiple of {self.size}")
        _expect_count(recv, send.count, "recvbuf", "all_to_all of sendbuf's count")
        count = send.count // self.size
        return self._run(lambda req: lib.psdp_all_to_all(send.address, recv.address, count, dt, comm, None, req),
                        [send, recv], blocking)

    def all_gather_v(self, sendbuf: object, recvbuf: object, recvcounts: Sequence[int], *,
                     dtype: DType | None = None, blocking: bool = True) -> Request | None:
        """All-gather with per-rank counts (the same list on every rank): sendbuf holds recvcounts[rank]
        elements, recvbuf their sum, rank r's block after those of ranks 0..r-1."""
        comm = self._handle_for_call()
        send, recv = self._in(sendbuf, "sendbuf", dtype), self._out(recvbuf, "recvbuf", dtype)
        dt = _same_dtype({"sendbuf": send, "recvbuf": recv})
        counts = _counts_array(recvcounts, self.size)
        _expect_count(send, counts[self.rank], "sendbuf", f"recvcounts[{self.rank}]")
        _expect_count(recv, sum(counts), "recvbuf", "the sum of recvcounts")
        return self._run(lambda req: lib.psdp_all_gather_v(send.address, recv.address, counts, dt, comm, None, req),
                        [send, recv], blocking)

    def reduce_scatter_v(self, sendbuf: object, recvbuf: object, recvcounts: Sequence[int], op: OpLike = Op.SUM,
                         *, dtype: DType | None = None, blocking: bool = True) -> Request | None:
        """Reduce-scatter with per-rank counts (the same list on every rank): sendbuf holds their sum;
        recvbuf receives recvcounts[rank] elements, the reduction of this rank's block."""
        comm = self._handle_for_call()
        send, recv = self._in(sendbuf, "sendbuf", dtype), self._out(recvbuf, "recvbuf", dtype)
        dt, opv = _same_dtype({"sendbuf": send, "recvbuf": recv}), _op_value(op)
        counts = _counts_array(recvcounts, self.size)
        _expect_count(send, sum(counts), "sendbuf", "the sum of recvcounts")
        _expect_count(recv, counts[self.rank], "recvbuf", f"recvcounts[{self.rank}]")
        return self._run(lambda req: lib.psdp_reduce_scatter_v(send.address, recv.address, counts, dt, opv, comm,
                                                              None, req), [send, recv], blocking)

    def send(self, sendbuf: object, peer: int, *, dtype: DType | None = None,
             blocking: bool = True) -> Request | None:
        """Sends sendbuf to rank `peer`, matched there by the corresponding recv. A blocking send returns
        once the message has left sendbuf."""
        comm = self._handle_for_call()
        peer = operator.index(peer)
        send = self._in(sendbuf, "sendbuf", dtype)
        return self._run(lambda req: lib.psdp_send(send.address, send.count, send.dtype, peer, comm, None, req),
                        [send], blocking)

    def recv(self, recvbuf: object, peer: int, *, dtype: DType | None = None,
             blocking: bool = True) -> Request | None:
        """Receives recvbuf's count of elements from rank `peer` (the same bytes as its send)."""
        comm = self._handle_for_call()
        peer = operator.index(peer)
        recv = self._out(recvbuf, "recvbuf", dtype)
        return self._run(lambda req: lib.psdp_recv(recv.address, recv.count, recv.dtype, peer, comm, None, req),
                        [recv], blocking)
