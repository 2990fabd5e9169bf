"""psdp: Python bindings of the psdp communication library, over an installed libpsdp.so.

    import numpy, psdp
    with psdp.Communicator.from_env() as comm:
        grads = numpy.ones(1024, dtype=numpy.float32)
        comm.all_reduce(grads, grads, psdp.SUM)

Importing the package loads libpsdp.so (PSDP_LIBRARY, else the dynamic loader's search path) and raises
psdp.LibraryLoadError, an ImportError, when it cannot.
"""

from ._library import library_name as _library_name
from ._library import library_version as _library_version
from .buffers import RawBuffer
from .communicator import Communicator
from .config import Config
from .constants import SPLIT_NOCOLOR, Algorithm, CheckMode, DType, LogLevel, Op, ProgressMode, Status
from .errors import (
    AbortedError,
    Error,
    InternalError,
    InvalidArgumentError,
    InvalidUsageError,
    LibraryLoadError,
    LibraryVersionError,
    MismatchError,
    RemoteError,
    SystemFailureError,
    TimeoutExpiredError,
    UnsupportedError,
)
from .memory import HostMemory
from .premul_sum import PremulSumOp
from .request import Request, wait_all
from .unique_id import UniqueId, get_unique_id

__version__ = "0.2.0"

# The dtypes and ops as module constants too, as psdp.h spells them: psdp.FLOAT32, psdp.SUM.
INT8, UINT8, INT32, UINT32 = DType.INT8, DType.UINT8, DType.INT32, DType.UINT32
INT64, UINT64, FLOAT16, BFLOAT16 = DType.INT64, DType.UINT64, DType.FLOAT16, DType.BFLOAT16
FLOAT32, FLOAT64 = DType.FLOAT32, DType.FLOAT64
SUM, PROD, MIN, MAX, AVG = Op.SUM, Op.PROD, Op.MIN, Op.MAX, Op.AVG


def library_version() -> tuple[int, int, int]:
    """(major, minor, patch) of the libpsdp.so loaded (psdp_get_version)."""
    return _library_version


def library_name() -> str:
    """The name or path libpsdp.so was loaded by."""
    return _library_name


__all__ = [
    "AbortedError", "Algorithm", "AVG", "BFLOAT16", "CheckMode", "Communicator", "Config", "DType", "Error",
    "FLOAT16", "FLOAT32", "FLOAT64", "HostMemory", "INT8", "INT32", "INT64", "InternalError", "InvalidArgumentError",
    "InvalidUsageError", "LibraryLoadError", "LibraryVersionError", "LogLevel", "MAX", "MIN", "MismatchError",
    "Op", "PremulSumOp", "PROD", "ProgressMode", "RawBuffer", "RemoteError", "Request", "SPLIT_NOCOLOR",
    "Status", "SUM", "SystemFailureError", "TimeoutExpiredError", "UINT8", "UINT32", "UINT64", "UniqueId",
    "UnsupportedError", "get_unique_id", "library_name", "library_version", "wait_all",
]
