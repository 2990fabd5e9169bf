"""The enumerations of psdp.h, with the same values, and the element size of each dtype."""

from enum import IntEnum

# The header these bindings are written against: psdp.h's PSDP_VERSION_MAJOR/MINOR/PATCH.
HEADER_VERSION = (0, 2, 0)


def version_code(major: int, minor: int, patch: int) -> int:
    """PSDP_VERSION_CODE_OF: the single integer psdp_get_version reports."""
    return major * 10000 + minor * 100 + patch


HEADER_VERSION_CODE = version_code(*HEADER_VERSION)


class Status(IntEnum):
    """psdp_status_t: what every call of the C library returns."""

    SUCCESS = 0
    IN_PROGRESS = 1
    ERR_INVALID_ARGUMENT = -1
    ERR_INVALID_USAGE = -2
    ERR_SYSTEM = -3
    ERR_INTERNAL = -4
    ERR_REMOTE = -5
    ERR_TIMEOUT = -6
    ERR_UNSUPPORTED = -7
    ERR_MISMATCH = -8
    ERR_ABORTED = -9


class DType(IntEnum):
    """psdp_dtype_t: the element types of collective buffers."""

    INT8 = 0
    UINT8 = 1
    INT32 = 2
    UINT32 = 3
    INT64 = 4
    UINT64 = 5
    FLOAT16 = 6
    BFLOAT16 = 7
    FLOAT32 = 8
    FLOAT64 = 9

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return _ITEMSIZE[self]


_ITEMSIZE = {
    DType.INT8: 1,
    DType.UINT8: 1,
    DType.INT32: 4,
    DType.UINT32: 4,
    DType.INT64: 8,
    DType.UINT64: 8,
    DType.FLOAT16: 2,
    DType.BFLOAT16: 2,
    DType.FLOAT32: 4,
    DType.FLOAT64: 8,
}


class Op(IntEnum):
    """psdp_op_t: the built-in reductions (Communicator.premul_sum_op makes the scaled sum)."""

    SUM = 0
    PROD = 1
    MIN = 2
    MAX = 3
    AVG = 4


class LogLevel(IntEnum):
    """psdp_log_level_t, for Config.log_level."""

    OFF = 0
    ERROR = 1
    WARN = 2
    INFO = 3
    DEBUG = 4
    TRACE = 5


class ProgressMode(IntEnum):
    """psdp_progress_mode_t, for Config.progress_mode."""

    THREAD = 0
    CALLER = 1


class Algorithm(IntEnum):
    """psdp_algorithm_t, for Config.algorithm."""

    AUTO = 0
    RING = 1
    RHD = 2
    DIRECT = 3


class CheckMode(IntEnum):
    """psdp_check_t, for Config.check: whether every collective first agrees its call across ranks."""

    FULL = 0
    OFF = 1


# psdp_comm_split's color for a rank that joins no new communicator.
SPLIT_NOCOLOR = -1
