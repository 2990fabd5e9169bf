"""`PsdpBackend`: a torch.distributed backend (a c10d Backend written in Python) whose calls run on a psdp
communicator.

An asynchronous call (async_op=True, and every send and recv) posts nonblocking psdp operations and returns a
`Work` at once, psdp's progress thread moving the data meanwhile; a synchronous one makes the blocking psdp
call, which torch would wait for at once anyway. Calls whose torch form is a list of tensors (list all_gather,
gather, scatter, list reduce_scatter) go through one contiguous temporary unless the list already lies
contiguous in memory, in rank order; uneven lists use psdp's per-rank-count collectives or point-to-point
messages.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Sequence

import torch
from torch._C._distributed_c10d import Backend as C10dBackend
from torch._C._distributed_c10d import ReduceOp

from ..buffers import ResolvedBuffer
from ..communicator import Communicator
from ..config import Config
from ..constants import Op
from ..errors import UnsupportedError
from ..premul_sum import PremulSumOp
from ..request import Request
from ..unique_id import UniqueId, get_unique_id
from .tensors import check_tensor, check_tensors, data_buffer, op_kind, premul_factor, reduce_buffer
from .work import Completer, Finisher, Work

BACKEND_NAME = "psdp"
_UNIQUE_ID_KEY = "psdp_unique_id"


def _contiguous_run(tensors: Sequence[torch.Tensor]) -> torch.Tensor | None:
    """A tensor viewing `tensors` as one block, if they lie back to back in memory in list order with one
    dtype; else None."""
    if not tensors:
        return None
    first = tensors[0]
    address = first.data_ptr()
    for tensor in tensors:
        if tensor.dtype != first.dtype or tensor.data_ptr() != address:
            return None
        address += tensor.numel() * tensor.element_size()
    total = sum(t.numel() for t in tensors)
    storage_offset = first.storage_offset()
    if storage_offset + total > first.untyped_storage().nbytes() // first.element_size():
        return None
    return first.new_empty(0).set_(first.untyped_storage(), storage_offset, (total,))


def _unpack(block: torch.Tensor, tensors: Sequence[torch.Tensor]) -> None:
    """Copies consecutive pieces of `block` into `tensors`."""
    offset = 0
    for tensor in tensors:
        tensor.view(-1).copy_(block[offset:offset + tensor.numel()])
        offset += tensor.numel()


def _flat_output(tensors: Sequence[torch.Tensor]) -> tuple[torch.Tensor, Finisher | None]:
    """A block to receive `tensors`' elements into, and the step that copies it out (None when the block
    is the tensors' own memory)."""
    block = _contiguous_run(tensors)
    if block is not None:
        return block, None
    block = torch.empty(sum(t.numel() for t in tensors), dtype=tensors[0].dtype)
    return block, lambda: _unpack(block, tensors)


def _flat_input(tensors: Sequence[torch.Tensor]) -> torch.Tensor:
    block = _contiguous_run(tensors)
    return block if block is not None else torch.cat([t.reshape(-1) for t in tensors])


class PsdpBackend(C10dBackend):
    """A torch.distributed backend for CPU tensors over a psdp communicator of `size` ranks."""

    def __init__(self, comm: Communicator, timeout: datetime.timedelta) -> None:
        super().__init__(comm.rank, comm.size)
        self._comm = comm
        self._options = C10dBackend.Options(BACKEND_NAME, timeout=timeout)
        self._completer = Completer(f"psdp-torch-completer-{comm.rank}")
        self._coalesced: list[Work] | None = None  # the works of an open coalescing window

    @classmethod
    def from_store(cls, store: torch.distributed.Store, rank: int, size: int,
                   timeout: datetime.timedelta) -> PsdpBackend:
        """Joins the group: rank 0 makes a psdp rendezvous and publishes its unique id in torch's store, the
        others read it from there. torch's timeout bounds every psdp call unless PSDP_TIMEOUT is set."""
        if rank == 0:
            unique_id = get_unique_id()
            store.set(_UNIQUE_ID_KEY, bytes(unique_id))
        else:
            unique_id = UniqueId.from_bytes(store.get(_UNIQUE_ID_KEY))
        config = Config()
        if "PSDP_TIMEOUT" not in os.environ:
            config.timeout_s = timeout.total_seconds()
        return cls(Communicator.from_unique_id(unique_id, rank, size, config), timeout)

    @property
    def communicator(self) -> Communicator:
        """The psdp communicator the backend runs on."""
        return self._comm

    @property
    def options(self) -> C10dBackend.Options:
        return self._options

    def getBackendName(self) -> str:
        return BACKEND_NAME

    # torch asks these of every backend; a Python backend must answer them itself.
    @property
    def supports_splitting(self) -> bool:
        return False

    @property
    def supports_coalescing(self) -> bool:
        return True

    def start_coalescing(self) -> None:
        """Opens a window (torch's _coalescing_manager, batch_isend_irecv): calls still post at once, as all
        of this backend's do; end_coalescing returns one work for all of them."""
        self._coalesced = []

    def end_coalescing(self) -> Work:
        works, self._coalesced = self._coalesced or [], None

        def wait_all() -> None:
            for work in works:
                work.wait()

        return Work([], [t for w in works for t in w._result], wait_all, self._completer)

    # --- helpers -----------------------------------------------------------------------------------------

    def _blocking(self, opts) -> bool:
        """Whether to make the psdp call blocking: for torch's synchronous calls (asyncOp False), which wait
        at once anyway, a blocking call saves the request and the hand-over to psdp's progress thread
        (measured: tens of microseconds per call). Never inside a coalescing window, whose calls must all be
        posted before any is waited for."""
        return self._coalesced is None and opts is not None and not opts.asyncOp

    def _work(self, requests: list[Request | None], result: list[torch.Tensor],
              finish: Finisher | None = None) -> Work:
        work = Work([r for r in requests if r is not None], result, finish, self._completer)
        if self._coalesced is not None:
            self._coalesced.append(work)
        return work

    def _post_reduction(self, post, buffer: ResolvedBuffer, reduce_op: ReduceOp) -> Request | None:
        """post(buffer, op): the reduction's call, given the psdp op of `reduce_op` (a premul-sum op made for
        the call and destroyed once it is posted: psdp reads the scalar at the post)."""
        op: Op | PremulSumOp | None = op_kind(reduce_op)
        premul = None
        if op is None:
            op = premul = self._comm.premul_sum_op(premul_factor(reduce_op), buffer.dtype)
        try:
            return post(buffer, op)
        finally:
            if premul is not None:
                premul.destroy()

    # --- collectives -------------------------------------------------------------------------------------

    def allreduce(self, tensors: list[torch.Tensor], opts) -> Work:
        tensors = check_tensors(tensors, "tensors")
        blocking, reduce_op, comm = self._blocking(opts), opts.reduceOp, self._comm
        requests = [self._post_reduction(lambda b, op: comm.all_reduce(b, b, op, blocking=blocking),
                                         reduce_buffer(t, reduce_op, "tensors"), reduce_op) for t in tensors]
        return self._work(requests, tensors)

    def allreduce_coalesced(self, tensors: list[torch.Tensor], opts) -> Work:
        """One all-reduce of the tensors packed together, unpacked when it completes: one call instead of one
        per tensor, and ranks passing other lists (another number of tensors, say) get a mismatch rather
        than collectives paired wrongly."""
        tensors = check_tensors(tensors, "tensors")
        for tensor in tensors:
            self._expect_same_dtype(tensor, tensors[0])
        packed, finish = _contiguous_run(tensors), None
        if packed is None:
            packed = torch.cat([t.reshape(-1) for t in tensors])
            finish = lambda: _unpack(packed, tensors)  # noqa: E731
        blocking, reduce_op, comm = self._blocking(opts), opts.reduceOp, self._comm
        request = self._post_reduction(lambda b, op: comm.all_reduce(b, b, op, blocking=blocking),
                                       reduce_buffer(packed, reduce_op, "tensors"), reduce_op)
        return self._work([request], tensors, finish)

    def reduce(self, tensors: list[torch.Tensor], opts) -> Work:
        tensors = check_tensors(tensors, "tensors")
        blocking = self._blocking(opts)
        comm, root = self._comm, opts.rootRank
        mine = comm.rank == root
        requests = [self._post_reduction(lambda b, op: comm.reduce(b, b if mine else None, op, root,
                                                                   blocking=blocking),
                                         reduce_buffer(t, opts.reduceOp, "tensors"), opts.reduceOp)
                    for t in tensors]
        return self._work(requests, tensors)

    def broadcast(self, tensors: list[torch.Tensor], opts) -> Work:
        tensors = check_tensors(tensors, "tensors")
        blocking = self._blocking(opts)
        comm, root = self._comm, opts.rootRank
        requests = []
        for tensor in tensors:
            buffer = data_buffer(tensor)
            send = buffer if comm.rank == root else None
            requests.append(comm.broadcast(send, buffer, root, blocking=blocking))
        return self._work(requests, tensors)

    def barrier(self, opts=None) -> Work:
        return self._work([self._comm.barrier(blocking=self._blocking(opts))], [])

    def all_gather_single(self, output: torch.Tensor, input: torch.Tensor, opts) -> Work:
        """torch.distributed.all_gather_into_tensor."""
        output, input = check_tensor(output, "output_tensor"), check_tensor(input, "input_tensor")
        blocking = self._blocking(opts)
        self._expect_same_dtype(output, input)
        request = self._comm.all_gather(data_buffer(input), data_buffer(output), blocking=blocking)
        return self._work([request], [output])

    def allgather(self, outputs: list[list[torch.Tensor]], inputs: list[torch.Tensor], opts) -> Work:
        """torch.distributed.all_gather (a list of tensors, possibly of different sizes)."""
        inputs = check_tensors(inputs, "input_tensors")
        blocking = self._blocking(opts)
        requests, finishers = [], []
        for i, (output_list, input) in enumerate(zip(outputs, inputs, strict=True)):
            output_list = self._expect_one_per_rank(output_list, f"output_tensors[{i}]")
            for tensor in output_list:
                self._expect_same_dtype(tensor, input)
            block, finish = _flat_output(output_list)
            counts = [t.numel() for t in output_list]
            if all(c == input.numel() for c in counts):
                requests.append(self._comm.all_gather(data_buffer(input), data_buffer(block), blocking=blocking))
            else:
                requests.append(self._comm.all_gather_v(data_buffer(input), data_buffer(block),
                                                        self._byte_counts(counts, input), blocking=blocking))
            finishers.append(finish)
        return self._work(requests, [t for output_list in outputs for t in output_list], _chain(finishers))

    def allgather_coalesced(self, outputs: list[list[torch.Tensor]], inputs: list[torch.Tensor], opts) -> Work:
        return self.allgather(outputs, inputs, opts)

    def all_gather_single_coalesced(self, outputs: list[torch.Tensor], inputs: list[torch.Tensor], opts) -> Work:
        works = [self.all_gather_single(o, i, opts) for o, i in zip(outputs, inputs, strict=True)]
        return self._merge(works, outputs)

    def reduce_scatter_single(self, output: torch.Tensor, input: torch.Tensor, opts) -> Work:
        """torch.distributed.reduce_scatter_tensor."""
        output, input = check_tensor(output, "output"), check_tensor(input, "input")
        blocking = self._blocking(opts)
        self._expect_same_dtype(output, input)
        comm = self._comm
        send = reduce_buffer(input, opts.reduceOp, "input")
        request = self._post_reduction(lambda b, op: comm.reduce_scatter(send, b, op, blocking=blocking),
                                       reduce_buffer(output, opts.reduceOp, "output"), opts.reduceOp)
        return self._work([request], [output])

    def reduce_scatter_single_coalesced(self, outputs: list[torch.Tensor], inputs: list[torch.Tensor],
                                        opts) -> Work:
        works = [self.reduce_scatter_single(o, i, opts) for o, i in zip(outputs, inputs, strict=True)]
        return self._merge(works, outputs)

    def reduce_scatter(self, outputs: list[torch.Tensor], inputs: list[list[torch.Tensor]], opts) -> Work:
        """torch.distributed.reduce_scatter (a list of tensors per rank, possibly of different sizes)."""
        outputs = check_tensors(outputs, "output")
        blocking = self._blocking(opts)
        comm, requests = self._comm, []
        for i, (output, input_list) in enumerate(zip(outputs, inputs, strict=True)):
            input_list = self._expect_one_per_rank(input_list, f"input_list[{i}]")
            for tensor in input_list:
                self._expect_same_dtype(tensor, output)
            send = reduce_buffer(_flat_input(input_list), opts.reduceOp, f"input_list[{i}]")
            counts = [t.numel() for t in input_list]
            if all(c == output.numel() for c in counts):
                post = lambda b, op: comm.reduce_scatter(send, b, op, blocking=blocking)  # noqa: E731
            else:
                parts = send.count // sum(counts) if sum(counts) else 1  # 2 for complex tensors
                counts = [c * parts for c in counts]
                post = lambda b, op: comm.reduce_scatter_v(send, b, counts, op, blocking=blocking)  # noqa: E731
            requests.append(self._post_reduction(post, reduce_buffer(output, opts.reduceOp, "output"), opts.reduceOp))
        return self._work(requests, outputs)

    def gather(self, outputs: list[list[torch.Tensor]], inputs: list[torch.Tensor], opts) -> Work:
        input = _only(check_tensors(inputs, "input_tensors"), "input_tensors", "gather")
        blocking, comm, root = self._blocking(opts), self._comm, opts.rootRank
        if comm.rank != root:
            return self._work([comm.gather(data_buffer(input), None, root, blocking=blocking)], [])
        output_list = self._root_list(outputs, "gather_list", input, "input")
        block, finish = _flat_output(output_list)
        return self._work([comm.gather(data_buffer(input), data_buffer(block), root, blocking=blocking)],
                          output_list, finish)

    def scatter(self, outputs: list[torch.Tensor], inputs: list[list[torch.Tensor]], opts) -> Work:
        output = _only(check_tensors(outputs, "output_tensors"), "output_tensors", "scatter")
        blocking, comm, root = self._blocking(opts), self._comm, opts.rootRank
        if comm.rank != root:
            return self._work([comm.scatter(None, data_buffer(output), root, blocking=blocking)], [output])
        send = data_buffer(_flat_input(self._root_list(inputs, "scatter_list", output, "output")))
        return self._work([comm.scatter(send, data_buffer(output), root, blocking=blocking)], [output])

    def all_to_all_single(self, output: torch.Tensor, input: torch.Tensor, output_split_sizes: list[int],
                          input_split_sizes: list[int], opts) -> Work:
        output, input = check_tensor(output, "output"), check_tensor(input, "input")
        blocking = self._blocking(opts)
        self._expect_same_dtype(output, input)
        size = self._comm.size
        if not output_split_sizes and not input_split_sizes:
            if input.numel() % size or output.numel() != input.numel():
                raise ValueError(f"input holds {input.numel()} elements and output {output.numel()}: an even "
                                 f"all_to_all_single needs equal counts that divide by {size} ranks")
            request = self._comm.all_to_all(data_buffer(input), data_buffer(output), blocking=blocking)
            return self._work([request], [output])
        send_blocks = _split_rows(input, input_split_sizes, size, "input")
        recv_blocks = _split_rows(output, output_split_sizes, size, "output")
        return self._exchange(send_blocks, recv_blocks, [output])

    def alltoall(self, outputs: list[torch.Tensor], inputs: list[torch.Tensor], opts) -> Work:
        outputs = self._expect_one_per_rank(check_tensors(outputs, "output_tensor_list"), "output_tensor_list")
        inputs = self._expect_one_per_rank(check_tensors(inputs, "input_tensor_list"), "input_tensor_list")
        for output, input in zip(outputs, inputs):
            self._expect_same_dtype(output, input)
        return self._exchange(inputs, outputs, outputs)

    # --- point to point ------------------------------------------------------------------------------------

    def send(self, tensors: list[torch.Tensor], dst: int, tag: int = 0) -> Work:
        tensors = check_tensors(tensors, "tensors")
        _expect_no_tag(tag)
        return self._work([self._comm.send(data_buffer(t), dst, blocking=False) for t in tensors], tensors)

    def recv(self, tensors: list[torch.Tensor], src: int, tag: int = 0) -> Work:
        tensors = check_tensors(tensors, "tensors")
        _expect_no_tag(tag)
        return self._work([self._comm.recv(data_buffer(t), src, blocking=False) for t in tensors], tensors)

    def recv_anysource(self, tensors: list[torch.Tensor], tag: int = 0) -> Work:
        raise UnsupportedError("recv: psdp receives from a named rank only; pass src")

    # --- lifetime ----------------------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Completes what is in flight, then finalizes and destroys the communicator."""
        self._completer.stop()
        self._comm.close()

    def abort(self) -> None:
        """Fails the communicator at once (the peers' calls fail naming this rank) and destroys it."""
        try:
            self._comm.abort()
        finally:
            self._completer.stop()
            self._comm.destroy()

    # --- checks and shared steps ---------------------------------------------------------------------------

    def _expect_one_per_rank(self, tensors: list[torch.Tensor], name: str) -> list[torch.Tensor]:
        if len(tensors) != self._comm.size:
            raise ValueError(f"{name}: needs one tensor per rank ({self._comm.size}), got {len(tensors)}")
        return check_tensors(tensors, name)

    def _root_list(self, lists: list[list[torch.Tensor]], name: str, reference: torch.Tensor,
                   what: str) -> list[torch.Tensor]:
        """The root's one list of gather or scatter: a tensor per rank, each of the `what` tensor's dtype and
        size."""
        if len(lists) != 1:
            raise ValueError(f"{name}: the root takes one list of tensors, got {len(lists)}")
        tensors = self._expect_one_per_rank(lists[0], name)
        for tensor in tensors:
            self._expect_same_dtype(tensor, reference)
            if tensor.numel() != reference.numel():
                raise ValueError(f"{name}: every tensor must hold {reference.numel()} elements as the {what} "
                                 f"does; one holds {tensor.numel()}")
        return tensors

    @staticmethod
    def _expect_same_dtype(tensor: torch.Tensor, reference: torch.Tensor) -> None:
        if tensor.dtype != reference.dtype:
            raise TypeError(f"tensors of one call must have one dtype: {tensor.dtype} and {reference.dtype}")

    @staticmethod
    def _byte_counts(counts: list[int], reference: torch.Tensor) -> list[int]:
        """Element counts as data_buffer(reference) counts them (bytes for dtypes psdp has not)."""
        scale = data_buffer(reference.new_empty(1)).count
        return [c * scale for c in counts]

    def _exchange(self, send_blocks: list[torch.Tensor], recv_blocks: list[torch.Tensor],
                  result: list[torch.Tensor]) -> Work:
        """Block r of send_blocks to rank r and block r of recv_blocks from it, by point-to-point messages
        (its own block is copied)."""
        comm, requests = self._comm, []
        for peer in range(comm.size):
            if peer == comm.rank:
                if send_blocks[peer].numel() != recv_blocks[peer].numel():
                    raise ValueError(f"this rank sends itself {send_blocks[peer].numel()} elements but expects "
                                     f"{recv_blocks[peer].numel()}")
                continue
            if recv_blocks[peer].numel():
                requests.append(comm.recv(data_buffer(recv_blocks[peer]), peer, blocking=False))
            if send_blocks[peer].numel():
                requests.append(comm.send(data_buffer(send_blocks[peer]), peer, blocking=False))
        recv_blocks[comm.rank].copy_(send_blocks[comm.rank])
        return self._work(requests, result)

    def _merge(self, works: list[Work], result: list[torch.Tensor]) -> Work:
        requests = [r for w in works for r in w._requests]
        return self._work(requests, result)


def _chain(finishers: list[Finisher | None]) -> Finisher | None:
    steps = [f for f in finishers if f is not None]
    if not steps:
        return None

    def run() -> None:
        for step in steps:
            step()

    return run


def _only(tensors: list[torch.Tensor], name: str, call: str) -> torch.Tensor:
    if len(tensors) != 1:
        raise ValueError(f"{name}: {call} takes one tensor, got {len(tensors)}")
    return tensors[0]


def _split_rows(tensor: torch.Tensor, split_sizes: list[int], size: int, name: str) -> list[torch.Tensor]:
    """`tensor` cut along its first dimension into `size` blocks of split_sizes rows (even if empty)."""
    rows = tensor.shape[0] if tensor.dim() else 1
    if not split_sizes:
        if rows % size:
            raise ValueError(f"{name}: {rows} rows do not divide by {size} ranks; pass split sizes")
        split_sizes = [rows // size] * size
    if len(split_sizes) != size or any(s < 0 for s in split_sizes) or sum(split_sizes) != rows:
        raise ValueError(f"{name}_split_sizes {list(split_sizes)}: needs {size} sizes >= 0 summing to the "
                         f"{rows} rows of {name}")
    return list(tensor.reshape(rows, -1).split(list(split_sizes)))


def _expect_no_tag(tag: int) -> None:
    if tag:
        raise UnsupportedError(f"tag: psdp matches messages between two ranks in posting order and takes no "
                               f"tag; got tag {tag} (pass 0)")
