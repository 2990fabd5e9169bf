"""The exceptions of the bindings: one class per psdp_status_t error code, and the library-loading errors.

Every failed psdp call raises the subclass of `Error` for its status. The exception carries the status code
(`.status`) and the library's own message (`.message`, from psdp_get_last_error), which names the argument,
rank or operation at fault.
"""

from .constants import Status


class Error(Exception):
    """A psdp call failed. `status` is the psdp_status_t code, `message` psdp_get_last_error's text."""

    status: int = 0

    def __init__(self, message: str, status: int | None = None) -> None:
        if status is not None:
            self.status = status
        self.message = message
        super().__init__(message)

    def __str__(self) -> str:
        return f"{_STATUS_NAMES.get(self.status, 'psdp error')}: {self.message}"


class InvalidArgumentError(Error, ValueError):
    """An argument is wrong (out of range, unknown enum, misaligned buffer); PSDP_ERR_INVALID_ARGUMENT."""

    status = Status.ERR_INVALID_ARGUMENT


class InvalidUsageError(Error):
    """The arguments are fine but the call is not allowed now (e.g. use after destroy); PSDP_ERR_INVALID_USAGE."""

    status = Status.ERR_INVALID_USAGE


class SystemFailureError(Error):
    """The OS or a library below psdp failed (socket, memory, UCX); PSDP_ERR_SYSTEM."""

    status = Status.ERR_SYSTEM


class InternalError(Error):
    """A bug in psdp: please report it with the log; PSDP_ERR_INTERNAL."""

    status = Status.ERR_INTERNAL


class RemoteError(Error):
    """A peer failed, disconnected or reported an error; PSDP_ERR_REMOTE. The communicator is failed."""

    status = Status.ERR_REMOTE


class TimeoutExpiredError(Error, TimeoutError):
    """PSDP_TIMEOUT expired; PSDP_ERR_TIMEOUT. The communicator is failed. Also a builtin TimeoutError."""

    status = Status.ERR_TIMEOUT


class UnsupportedError(Error):
    """A valid request that this build or backend does not support; PSDP_ERR_UNSUPPORTED."""

    status = Status.ERR_UNSUPPORTED


class MismatchError(Error):
    """The ranks disagree (collective, count, dtype, job secret...); PSDP_ERR_MISMATCH. Fails the communicator."""

    status = Status.ERR_MISMATCH


class AbortedError(Error):
    """The communicator was aborted (Communicator.abort); PSDP_ERR_ABORTED."""

    status = Status.ERR_ABORTED


class LibraryLoadError(ImportError):
    """libpsdp.so could not be found or loaded; the message lists every place tried and how to fix it."""


class LibraryVersionError(LibraryLoadError):
    """The libpsdp.so found is of a version these bindings cannot drive."""


ERROR_CLASSES: dict[int, type[Error]] = {
    cls.status: cls
    for cls in (
        InvalidArgumentError,
        InvalidUsageError,
        SystemFailureError,
        InternalError,
        RemoteError,
        TimeoutExpiredError,
        UnsupportedError,
        MismatchError,
        AbortedError,
    )
}

# psdp_status_string's words, kept here so that an exception prints the same without a library call.
_STATUS_NAMES: dict[int, str] = {
    Status.ERR_INVALID_ARGUMENT: "invalid argument",
    Status.ERR_INVALID_USAGE: "invalid usage",
    Status.ERR_SYSTEM: "system error",
    Status.ERR_INTERNAL: "internal error",
    Status.ERR_REMOTE: "remote error",
    Status.ERR_TIMEOUT: "timeout",
    Status.ERR_UNSUPPORTED: "unsupported",
    Status.ERR_MISMATCH: "mismatch",
    Status.ERR_ABORTED: "aborted",
}

# Statuses after which the communicator is failed: it cannot be finalized, only destroyed.
COMMUNICATOR_FAILING = frozenset(
    {Status.ERR_REMOTE, Status.ERR_TIMEOUT, Status.ERR_MISMATCH, Status.ERR_ABORTED}
)


def error_for_status(status: int, message: str) -> Error:
    """The exception for a non-success status: its subclass, or `Error` itself for a code this version
    of the bindings does not know."""
    cls = ERROR_CLASSES.get(status)
    if cls is None:
        return Error(message, status)
    return cls(message)
