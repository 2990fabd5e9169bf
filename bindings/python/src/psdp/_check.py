"""Turns a psdp_status_t into an exception carrying the library's message."""

from ._library import last_error
from .constants import Status
from .errors import error_for_status


def check(status: int, comm: int | None) -> None:
    """Raises the psdp.Error subclass of a failed status, with psdp_get_last_error(comm)'s text.

    `comm` is the handle of the live communicator the call was given (its store holds the message), or
    None for calls without one (the calling thread's store). ctypes makes the C call in the calling OS
    thread, so the thread's store is the right one to read.
    """
    if status != Status.SUCCESS:
        raise error_for_status(status, last_error(comm))
