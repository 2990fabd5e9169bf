"""`Communicator`: a psdp_comm_h, its lifetime (init, split, finalize, abort, destroy) and the requests
still in flight on it. The communication calls themselves are in `_collectives.Collectives`."""

from __future__ import annotations

import atexit
import ctypes
import warnings
import weakref
from collections.abc import Callable
from types import TracebackType

from ._c_types import Handle
from ._check import check
from ._collectives import Collectives, RequestPointer
from ._library import lib
from .buffers import ResolvedBuffer
from .config import Config, to_struct
from .constants import SPLIT_NOCOLOR, DType, Status
from .errors import COMMUNICATOR_FAILING, Error, InternalError, InvalidUsageError
from .premul_sum import PremulSumOp
from .request import Operation, Request
from .unique_id import UniqueId

# Communicators not destroyed yet: destroyed at interpreter exit, before the modules they need are torn down.
_live: weakref.WeakSet[Communicator] = weakref.WeakSet()


class Communicator(Collectives):
    """A group of ranks that run collectives together (psdp_comm_h).

    Make one with `Communicator.from_env()` under a launcher (psdp-run, torchrun, mpirun, srun), or with
    `Communicator.from_unique_id()`. End it with `close()` (finalize, then destroy) or a `with` block, which
    aborts instead of finalizing when the block raises, so that the peers fail at once instead of waiting for
    their timeout.

    `rank` is this process's rank in it, `size` the number of ranks.

    Thread safety: as in C, calls on one communicator must be made in the same order on every rank, and one
    thread at a time may post on it; `abort()` may be called from any thread, also while another one blocks
    in a call. Blocking calls release the GIL.
    """

    def __init__(self, handle: int, *, _private: object = None) -> None:
        if _private is not _CONSTRUCT:
            raise TypeError("use Communicator.from_env, Communicator.from_unique_id or split to make one")
        self._handle: int | None = None  # set last: until then the caller still owns the handle
        self._finalized = False
        self._failed = False
        self._operations: set[Operation] = set()
        self._destroy_hooks: list[Callable[[], None]] = []
        rank, size = ctypes.c_int(), ctypes.c_int()
        check(lib.psdp_comm_rank(handle, ctypes.byref(rank)), handle)
        check(lib.psdp_comm_size(handle, ctypes.byref(size)), handle)
        self.rank: int = rank.value  # fixed for the communicator's life, so read once
        self.size: int = size.value
        self._handle = handle
        _live.add(self)

    @classmethod
    def _adopt(cls, handle: Handle) -> Communicator:
        """Wraps a communicator psdp has just made, destroying it if that fails."""
        if not handle.value:
            raise InternalError("psdp returned success without a communicator")
        try:
            return cls(handle.value, _private=_CONSTRUCT)
        except BaseException:
            lib.psdp_comm_destroy(handle.value)
            raise

    @classmethod
    def from_env(cls, config: Config | None = None) -> Communicator:
        """Joins the job a launcher started (psdp_comm_init_from_env): rank, size and rendezvous come from
        PSDP_RANK/PSDP_WORLD_SIZE/PSDP_ROOT_ADDR/PSDP_JOB_SECRET (psdp-run), torchrun's, Open MPI's or Slurm's
        variables. Collective: blocks until every rank has joined, or the timeout."""
        handle = Handle()
        check(lib.psdp_comm_init_from_env(to_struct(config), ctypes.byref(handle)), None)
        return cls._adopt(handle)

    @classmethod
    def from_unique_id(cls, unique_id: UniqueId, rank: int, size: int,
                       config: Config | None = None) -> Communicator:
        """Joins the rendezvous of `unique_id` (from psdp.get_unique_id on one process, copied to all) as
        `rank` of `size` ranks (psdp_comm_init). Collective: blocks until every rank has joined."""
        if not isinstance(unique_id, UniqueId):
            raise TypeError(f"unique_id: expected a psdp.UniqueId, got {type(unique_id).__name__}")
        handle = Handle()
        check(lib.psdp_comm_init(size, ctypes.byref(unique_id._struct), rank, to_struct(config),
                                 ctypes.byref(handle)), None)
        return cls._adopt(handle)

    @property
    def closed(self) -> bool:
        """True once the communicator is destroyed (by destroy(), close() or the end of a with block)."""
        return self._handle is None

    # --- for the package's requests and ops ------------------------------------------------------------------

    @property
    def _live_handle(self) -> int | None:
        """The psdp_comm_h, or None once destroyed."""
        return self._handle

    def _handle_for_call(self) -> int:
        """The handle for a call on this communicator; InvalidUsageError once it is destroyed (the C
        handle is freed then: passing it to psdp would be undefined)."""
        if self._handle is None:
            raise InvalidUsageError("the communicator was destroyed")
        self._reap_abandoned()
        return self._handle

    def _note_status(self, status: int) -> None:
        """Remembers a status that fails the communicator: close() then only destroys it."""
        if status in COMMUNICATOR_FAILING:
            self._failed = True

    def _on_destroy(self, hook: Callable[[], None]) -> None:
        """Runs `hook` when the communicator is destroyed, before psdp frees it (e.g. to unregister it from
        psdp.jax, whose programs must not reach a freed handle)."""
        self._destroy_hooks.append(hook)

    def _forget(self, operation: Operation) -> None:
        """Called by an operation once complete and freed."""
        self._operations.discard(operation)

    def _check(self, status: int) -> None:
        self._note_status(status)
        check(status, self._handle)

    def _reap_abandoned(self, block: bool = False) -> None:
        """Frees the requests the caller dropped before they completed, once they have. `list` takes the
        snapshot in one step, while another thread's wait may remove an operation from the set."""
        if not self._operations:
            return  # the common case, checked first: this runs before every call
        for operation in [op for op in list(self._operations) if op.abandoned]:
            if operation.lock.acquire(blocking=block):
                try:
                    operation.poll()
                except Exception:
                    pass  # its failure failed the communicator too; later calls report it
                finally:
                    operation.lock.release()

    def _run(self, call: Callable[[RequestPointer], int], buffers: list[ResolvedBuffer | None],
             blocking: bool) -> Request | None:
        """Makes a C call blocking (request_p NULL) or nonblocking; a Request keeps the buffers alive."""
        if blocking:
            try:
                status = call(None)
            finally:
                for buffer in buffers:
                    if buffer is not None:
                        buffer.release()
            if status != Status.SUCCESS:
                self._check(status)
            return None
        used = [b for b in buffers if b is not None]
        request = Handle()
        try:
            status = call(ctypes.byref(request))
        except BaseException:
            for buffer in used:
                buffer.release()
            raise
        if status != Status.SUCCESS:
            for buffer in used:
                buffer.release()
            self._check(status)
        if not request.value:
            raise InternalError("psdp returned success without a request")
        operation = Operation(request.value, self, used)
        self._operations.add(operation)
        return Request(operation)

    # --- teams ---------------------------------------------------------------------------------------------

    def split(self, color: int, key: int = 0, config: Config | None = None) -> Communicator | None:
        """Collective: ranks passing the same color form a new communicator, ordered by key, then by rank
        (psdp_comm_split). color psdp.SPLIT_NOCOLOR (-1) joins none and returns None. config None inherits
        this communicator's. The new communicator is independent: it fails and is destroyed on its own."""
        comm = self._handle_for_call()
        handle = Handle()
        self._check(lib.psdp_comm_split(comm, color, key, to_struct(config), ctypes.byref(handle)))
        if color == SPLIT_NOCOLOR or not handle.value:
            return None
        return Communicator._adopt(handle)

    def split_layout(self, group_size: int, config: Config | None = None) -> tuple[Communicator, Communicator]:
        """Collective: this rank's shard group and replica group for shard groups of `group_size`
        (psdp_comm_split_layout), the teams of the rank layout `layout(group_size)` returns."""
        comm = self._handle_for_call()
        shard, replica = Handle(), Handle()
        self._check(lib.psdp_comm_split_layout(comm, group_size, to_struct(config), ctypes.byref(shard),
                                               ctypes.byref(replica)))
        try:
            shard_comm = Communicator._adopt(shard)
        except BaseException:
            lib.psdp_comm_destroy(replica.value)
            raise
        return shard_comm, Communicator._adopt(replica)

    def layout(self, group_size: int) -> list[int]:
        """The rank layout for shard groups of `group_size` (psdp_comm_get_layout): `size` ranks, shard
        group k being entries k*group_size .. k*group_size + group_size-1. Local."""
        comm = self._handle_for_call()
        layout = (ctypes.c_int * self.size)()
        self._check(lib.psdp_comm_get_layout(comm, group_size, layout))
        return list(layout)

    def premul_sum_op(self, scalar: float | int, dtype: DType) -> PremulSumOp:
        """A reduction op for `dtype` on this communicator that multiplies each input by `scalar` before
        summing (psdp_op_create_premul_sum). Local."""
        return PremulSumOp(self, scalar, dtype)

    # --- lifetime ------------------------------------------------------------------------------------------

    def finalize(self) -> None:
        """Collective: completes outstanding operations and flushes the transport so every peer can destroy
        cleanly. Afterwards only local queries and destroy() are allowed."""
        comm = self._handle_for_call()
        self._finalized = True
        self._check(lib.psdp_comm_finalize(comm))

    def abort(self) -> None:
        """Fails the communicator now: pending and blocked operations raise AbortedError, the peers' fail
        with RemoteError naming this rank. Local, non-blocking, safe from any thread."""
        if self._handle is not None:
            self._failed = True
            self._check(lib.psdp_comm_abort(self._handle))

    def destroy(self) -> None:
        """Frees the communicator (psdp_comm_destroy). Local: does not wait for peers (call finalize first
        for a clean shutdown). Pending requests complete with InvalidUsageError. Idempotent."""
        handle, self._handle = self._handle, None
        if handle is None:
            return
        _live.discard(self)
        hooks, self._destroy_hooks = self._destroy_hooks, []
        for hook in hooks:
            hook()
        status = lib.psdp_comm_destroy(handle)
        # psdp has completed every pending request now: free those the caller dropped.
        self._reap_abandoned(block=True)
        check(status, None)

    def close(self) -> None:
        """finalize(), unless the communicator failed or was aborted, then destroy(); destroys even when
        finalize raises (and re-raises it)."""
        if self._handle is None:
            return
        try:
            if not (self._finalized or self._failed):
                self.finalize()
        finally:
            self.destroy()

    def __enter__(self) -> Communicator:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if exc_type is None:
            self.close()
            return
        try:
            self.abort()
        except Error:
            pass  # the block's own exception is the one to report
        finally:
            self.destroy()

    def __del__(self) -> None:
        if getattr(self, "_handle", None) is not None:
            warnings.warn(f"psdp communicator (rank {self.rank} of {self.size}) was not closed",
                          ResourceWarning, stacklevel=2)
            try:
                self.destroy()
            except Exception:
                pass

    def __repr__(self) -> str:
        state = "destroyed" if self._handle is None else "finalized" if self._finalized else "live"
        return f"<psdp.Communicator rank {self.rank} of {self.size}, {state}>"


_CONSTRUCT = object()


@atexit.register
def _destroy_remaining() -> None:
    for comm in list(_live):
        try:
            comm.destroy()
        except Exception:
            pass
