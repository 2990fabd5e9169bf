"""`PremulSumOp`: the sum of inputs each first multiplied by a scalar (psdp_op_create_premul_sum)."""

from __future__ import annotations

import ctypes
import operator
import struct
from typing import TYPE_CHECKING, SupportsIndex, cast

from ._check import check
from ._library import lib
from .constants import DType

if TYPE_CHECKING:
    from .communicator import Communicator

_STRUCT_FORMATS = {
    DType.INT8: "b",
    DType.UINT8: "B",
    DType.INT32: "i",
    DType.UINT32: "I",
    DType.INT64: "q",
    DType.UINT64: "Q",
    DType.FLOAT16: "e",
    DType.FLOAT32: "f",
    DType.FLOAT64: "d",
}
_FLOAT_DTYPES = {DType.FLOAT16, DType.BFLOAT16, DType.FLOAT32, DType.FLOAT64}


def _bfloat16_bits(value: float) -> int:
    """The bfloat16 nearest to `value` (ties to even), as psdp and the ML frameworks round."""
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    if bits & 0x7F800000 == 0x7F800000 and bits & 0x007FFFFF:
        return (bits >> 16) | 0x0040  # a NaN stays a (quiet) NaN
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


def pack_scalar(value: float | int, dtype: DType) -> bytes:
    """`value` as one element of `dtype`, in host byte order."""
    if dtype == DType.BFLOAT16:
        return struct.pack("<H", _bfloat16_bits(float(value)))
    scalar = float(value) if dtype in _FLOAT_DTYPES else operator.index(cast(SupportsIndex, value))
    try:
        return struct.pack("<" + _STRUCT_FORMATS[dtype], scalar)
    except (struct.error, OverflowError) as error:
        raise ValueError(f"scalar: {value!r} does not fit {dtype.name.lower()}: {error}") from None


class PremulSumOp:
    """A reduction op valid for collectives on one communicator and one dtype: each rank's input is
    multiplied by `scalar` before the sum. Pass it as `op=`; destroy it (or use `with`) when done."""

    def __init__(self, comm: Communicator, scalar: float | int, dtype: DType) -> None:
        self.comm = comm
        self.dtype = DType(dtype)
        self.scalar = scalar
        data = pack_scalar(scalar, self.dtype)  # read by psdp during the call only
        op = ctypes.c_int()
        handle = comm._handle_for_call()
        check(lib.psdp_op_create_premul_sum(handle, data, self.dtype, ctypes.byref(op)), handle)
        self.value: int | None = op.value

    def destroy(self) -> None:
        """Releases the op (psdp_op_destroy); nothing to do once its communicator is destroyed."""
        value, self.value = self.value, None
        handle = self.comm._live_handle
        if value is not None and handle is not None:
            check(lib.psdp_op_destroy(handle, value), handle)

    def __index__(self) -> int:
        if self.value is None:
            raise ValueError("this premul-sum op was destroyed")
        return self.value

    __int__ = __index__

    def __enter__(self) -> PremulSumOp:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.destroy()

    def __repr__(self) -> str:
        state = "destroyed" if self.value is None else f"op {self.value}"
        return f"<psdp.PremulSumOp scalar={self.scalar!r} dtype={self.dtype.name.lower()} {state}>"
