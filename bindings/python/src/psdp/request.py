"""`Request`: a nonblocking operation in flight, and the bookkeeping that keeps its buffers alive."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ._c_types import Handle
from ._library import last_error, lib
from .buffers import ResolvedBuffer
from .constants import Status
from .errors import Error, InternalError, error_for_status

if TYPE_CHECKING:
    from .communicator import Communicator


class Operation:
    """A posted operation: its psdp_request_h and every buffer psdp may still read or write.

    The communicator holds each operation until it completes, so that dropping a Request while psdp still
    uses its buffers neither frees the buffers under psdp nor leaks the request. The lock serialises the
    calls that may free the handle (a wait in one thread against a test in another).
    """

    def __init__(self, handle: int, comm: Communicator, buffers: list[ResolvedBuffer]) -> None:
        self.handle: int | None = handle
        self.comm = comm
        self.buffers = buffers
        self.error: Error | None = None
        self.abandoned = False
        self.lock = threading.Lock()

    @property
    def done(self) -> bool:
        return self.handle is None

    def finish(self, status: int) -> None:
        """Records a final status, frees the request and lets go of the buffers. Call with the lock held."""
        if status != Status.SUCCESS:
            # Read before anything else can overwrite it: the communicator's store while it lives, else
            # this thread's, where psdp records errors of requests whose communicator is gone.
            self.error = error_for_status(status, last_error(self.comm._live_handle))
            self.comm._note_status(status)
        freed = lib.psdp_request_free(self.handle)
        if freed != Status.SUCCESS and self.error is None:
            self.error = InternalError(f"psdp_request_free of a completed request returned {freed}: "
                                       f"{last_error(self.comm._live_handle)}")
        self.handle = None
        for buffer in self.buffers:
            buffer.release()
        self.buffers = []
        self.comm._forget(self)

    def poll(self) -> bool:
        """Tests without blocking; True once complete. Call with the lock held."""
        if not self.done:
            status = lib.psdp_request_test(self.handle)
            if status == Status.IN_PROGRESS:
                return False
            self.finish(status)
        return True


class Request:
    """A nonblocking psdp operation, returned by every call made with blocking=False.

    The buffers passed to the call stay referenced here until the operation completes; do not touch their
    memory before then. The request frees itself (psdp_request_free) once test() or wait() sees it complete.
    Dropping a Request that is still in flight is safe: its communicator keeps it (and its buffers) until
    it completes.
    """

    def __init__(self, operation: Operation) -> None:
        self._operation = operation

    @property
    def done(self) -> bool:
        """True once test() or wait() has seen the operation complete (makes no call)."""
        return self._operation.done

    def test(self) -> bool:
        """True if the operation is complete, False if not (or if another thread is waiting on it right
        now); never blocks. Raises the operation's psdp.Error if it failed."""
        operation = self._operation
        if not operation.lock.acquire(blocking=False):
            return False
        try:
            complete = operation.poll()
        finally:
            operation.lock.release()
        if complete and operation.error is not None:
            raise operation.error
        return complete

    def wait(self, timeout: float | None = None) -> bool:
        """Blocks until the operation completes and returns True; raises its psdp.Error if it failed.

        timeout None waits up to the communicator's own timeout (PSDP_TIMEOUT, which then fails the
        communicator: TimeoutExpiredError). A timeout in seconds gives up after that long and returns False,
        leaving the request and the communicator as they were. The GIL is released while waiting.
        """
        if timeout is not None and not timeout >= 0:
            # Refused here: psdp's invalid-argument status would be indistinguishable from the operation's.
            raise ValueError(f"timeout: {timeout} seconds; expected None or a number >= 0")
        operation = self._operation
        with operation.lock:
            if not operation.done:
                if timeout is None:
                    status = lib.psdp_request_wait(operation.handle)
                else:
                    status = lib.psdp_request_wait_timeout(operation.handle, float(timeout))
                if status == Status.IN_PROGRESS:
                    return False
                operation.finish(status)
        if operation.error is not None:
            raise operation.error
        return True

    def __del__(self) -> None:
        operation = getattr(self, "_operation", None)
        if operation is None or not operation.lock.acquire(blocking=False):
            return
        try:
            operation.abandoned = True
            operation.poll()  # free it now if it is complete; else the communicator frees it later
        except Exception:
            pass  # nobody is left to tell; a failure also failed the communicator, whose calls report it
        finally:
            operation.lock.release()

    def __repr__(self) -> str:
        return f"<psdp.Request {'complete' if self.done else 'in flight'}>"


def wait_all(requests: Iterable[Request]) -> None:
    """Waits for every request as one wait (psdp_request_wait_all) and raises the psdp.Error of the first, in
    the given order, that failed; every request is complete and freed on return either way.

    With psdp's progress thread (the default), a wait() per request hands the driving of progress back to
    that thread at each return and takes it again at the next; this keeps it in the calling thread until the
    last request completes. The GIL is released while waiting.
    """
    operations = list(dict.fromkeys(request._operation for request in requests))  # unique, in order
    # Locked in one global order, so that two threads waiting on overlapping sets cannot deadlock.
    locked = sorted(operations, key=id)
    for operation in locked:
        operation.lock.acquire()
    try:
        pending = [operation for operation in operations if not operation.done]
        if pending:
            handles = (Handle * len(pending))(*[operation.handle for operation in pending])
            waited = lib.psdp_request_wait_all(handles, len(pending))
            for operation in pending:
                # Each is complete now (the wait refuses only bad handles, which these are not): the test
                # returns its own final status.
                status = lib.psdp_request_test(operation.handle)
                if status == Status.IN_PROGRESS:
                    raise InternalError(f"psdp_request_wait_all returned {waited} and left a request in flight")
                operation.finish(status)
    finally:
        for operation in locked:
            operation.lock.release()
    for operation in operations:
        if operation.error is not None:
            raise operation.error
