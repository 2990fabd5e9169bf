"""`Work`: what every call of the psdp backend returns, and the thread that completes its futures.

A Work holds the psdp requests of one torch call and what to do once they complete (copy a gathered temporary
into the caller's tensors, say). `wait()` waits in the calling thread. `get_future()` returns a
torch.futures.Future that the backend's completion thread fulfils, so that DDP's reducer and other users of
futures see the result without a thread of theirs blocking. That thread is the bindings' own and only waits
on requests: psdp's threads never call into Python.
"""

from __future__ import annotations

import datetime
import queue
import threading
from collections.abc import Callable

import torch
import torch.distributed as dist

from ..request import Request

Finisher = Callable[[], None]


class Work(dist._Work):
    """The requests of one call, its finishing step, and the tensors its future hands back."""

    def __init__(self, requests: list[Request], result: list[torch.Tensor], finish: Finisher | None,
                 completer: Completer) -> None:
        super().__init__()
        self._requests = requests
        self._result = result
        self._finish = finish
        self._completer = completer
        self._lock = threading.Lock()
        self._done = False
        self._error: BaseException | None = None
        self._future: torch.futures.Future | None = None

    def _complete(self, timeout_s: float | None) -> bool:
        """Waits for every request, then runs the finishing step once; False if timeout_s passed first."""
        with self._lock:
            if not self._done:
                try:
                    for request in self._requests:
                        if not request.wait(timeout_s):
                            return False
                    if self._finish is not None:
                        self._finish()
                except BaseException as error:
                    self._error = error
                self._done = True
                self._requests = []
                self._finish = None
        return True

    def wait(self, timeout: datetime.timedelta | float | None = None) -> bool:
        """Blocks until the call is complete; raises its psdp.Error if it failed. A timeout (a timedelta or
        seconds; zero or None: the communicator's own) that passes first raises TimeoutError."""
        if isinstance(timeout, datetime.timedelta):
            timeout = timeout.total_seconds()
        timeout_s = timeout if timeout else None
        if not self._complete(timeout_s):
            raise TimeoutError(f"psdp backend: the operation did not complete in {timeout_s} s")
        if self._error is not None:
            raise self._error
        return True

    def get_future(self) -> torch.futures.Future:
        """A future fulfilled with the call's output tensors (or its error) once it completes."""
        if self._future is None:
            self._future = torch.futures.Future()
            if self._done:
                self._fulfil()
            else:
                self._completer.submit(self)
        return self._future

    def _fulfil(self) -> None:
        """Completes the call (blocking) and sets the future."""
        self._complete(None)
        assert self._future is not None
        if self._error is not None:
            self._future.set_exception(self._error)
        else:
            self._future.set_result(self._result)


class Completer:
    """A daemon thread that completes, in the order given, the Works whose futures were asked for."""

    def __init__(self, name: str) -> None:
        self._queue: queue.SimpleQueue[Work | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._started = False
        self._start_lock = threading.Lock()

    def submit(self, work: Work) -> None:
        with self._start_lock:
            if not self._started:
                self._thread.start()
                self._started = True
        self._queue.put(work)

    def stop(self) -> None:
        """Completes what was submitted, then ends the thread."""
        with self._start_lock:
            if not self._started:
                return
        self._queue.put(None)
        self._thread.join()

    def _run(self) -> None:
        while (work := self._queue.get()) is not None:
            work._fulfil()
