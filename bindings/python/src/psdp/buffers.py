"""Turns what a caller passes as a buffer into (address, element count, psdp dtype).

Accepted, in this order of precedence:
- an object with `__array_interface__` (numpy arrays): read without importing numpy;
- `RawBuffer(address, count, dtype)`: memory the caller manages;
- a DLPack capsule ("dltensor" or "dltensor_versioned"), consumed by the call;
- an object with `__dlpack__` (and `__dlpack_device__`): host (kDLCPU) memory only.
The calls resolve every buffer on every call: the common path (a numpy array) is kept short, since its cost
is most of the bindings' per-call overhead.

Every buffer must be one C-contiguous block of elements of a psdp dtype. A dtype= override reinterprets
elements of the same size, e.g. numpy uint16 data as bfloat16, which numpy has no dtype for.
"""

import math
from dataclasses import dataclass
from typing import Any

from . import _dlpack
from .constants import DType

# __array_interface__ typestr (kind, bytes) -> psdp dtype.
_TYPESTR_DTYPES = {
    ("i", 1): DType.INT8,
    ("u", 1): DType.UINT8,
    ("i", 4): DType.INT32,
    ("u", 4): DType.UINT32,
    ("i", 8): DType.INT64,
    ("u", 8): DType.UINT64,
    ("f", 2): DType.FLOAT16,
    ("f", 4): DType.FLOAT32,
    ("f", 8): DType.FLOAT64,
}
_NATIVE_BYTE_ORDERS = ("<", "|", "=")  # psdp runs on little-endian hosts


@dataclass(frozen=True)
class RawBuffer:
    """Memory given by address: `count` elements of `dtype` starting at `address`.

    The caller keeps the memory alive and unmoved until the call using it completes; `owner`, if given,
    is an object the call keeps a reference to until then (e.g. the object that owns the memory).
    `read_only` makes calls that write the buffer refuse it.
    """

    address: int
    count: int
    dtype: DType
    read_only: bool = False
    owner: object = None


class ResolvedBuffer:
    """A buffer ready for a C call. `owner` keeps the memory alive while psdp uses it. (A plain class with
    slots: it is made for every buffer of every call, and a frozen dataclass costs several times as much.)"""

    __slots__ = ("address", "count", "dtype", "owner")

    def __init__(self, address: int, count: int, dtype: DType, owner: object) -> None:
        self.address = address
        self.count = count
        self.dtype = dtype
        self.owner = owner

    def release(self) -> None:
        """Gives a consumed DLPack tensor back to its producer once psdp is done with the memory."""
        if isinstance(self.owner, _dlpack.ConsumedTensor):
            self.owner.release()


def _check_override_size(itemsize: int, override: DType, name: str, what: str) -> None:
    if override.itemsize != itemsize:
        raise TypeError(f"{name}: dtype={override.name} has {override.itemsize}-byte elements, "
                        f"{what} {itemsize}-byte ones")


def _from_raw(buffer: RawBuffer, name: str, override: DType | None) -> ResolvedBuffer:
    dtype = DType(buffer.dtype)
    if buffer.count < 0:
        raise ValueError(f"{name}: RawBuffer count {buffer.count} is negative")
    if buffer.address < 0:
        raise ValueError(f"{name}: RawBuffer address {buffer.address} is negative")
    if override is not None:
        _check_override_size(dtype.itemsize, override, name, f"the RawBuffer's {dtype.name}")
        dtype = override
    return ResolvedBuffer(buffer.address, buffer.count, dtype, buffer.owner)


# (typestr, override) -> dtype, for the typestrs seen so far: parsing one on every call costs more than the call.
_known_typestrs: dict[tuple[str, DType | None], DType] = {}


def _array_dtype(typestr: str, name: str, override: DType | None) -> DType:
    known = _known_typestrs.get((typestr, override))
    if known is not None:
        return known
    dtype = _parse_typestr(typestr, name, override)
    _known_typestrs[(typestr, override)] = dtype
    return dtype


def _parse_typestr(typestr: str, name: str, override: DType | None) -> DType:
    order, kind, size = typestr[0], typestr[1], int(typestr[2:])
    if order not in _NATIVE_BYTE_ORDERS:
        raise TypeError(f"{name}: array dtype {typestr!r} is big-endian; psdp needs native byte order")
    if override is not None:
        _check_override_size(size, override, name, f"the array's {typestr!r}")
        return override
    dtype = _TYPESTR_DTYPES.get((kind, size))
    if dtype is None:
        hint = " (bfloat16: pass 2-byte data with dtype=psdp.BFLOAT16)" if size == 2 else ""
        raise TypeError(f"{name}: array dtype {typestr!r} is not one psdp supports "
                        f"({', '.join(d.name.lower() for d in DType)}){hint}")
    return dtype


def _c_contiguous(shape: tuple[int, ...], strides: tuple[int, ...] | None, itemsize: int) -> bool:
    if strides is None or 0 in shape:
        return True  # None is the interface's way of saying C-contiguous; an empty array has no layout
    expected = itemsize
    for extent, stride in zip(reversed(shape), reversed(strides), strict=True):
        if extent != 1 and stride != expected:
            return False
        expected *= extent
    return True


def _from_array_interface(obj: Any, interface: dict, name: str, writable: bool,
                          override: DType | None) -> ResolvedBuffer:
    data = interface.get("data")
    if type(data) is not tuple:
        raise TypeError(f"{name}: its __array_interface__ gives no data pointer")
    typestr = interface["typestr"]
    dtype = _array_dtype(typestr, name, override)
    shape = interface["shape"]
    strides = interface.get("strides")
    if strides is not None and not _c_contiguous(tuple(shape), strides, int(typestr[2:])):
        raise ValueError(f"{name}: array of shape {tuple(shape)} is not C-contiguous (strides {strides}); pass a "
                         f"contiguous copy (numpy.ascontiguousarray)")
    if interface.get("mask") is not None:
        raise TypeError(f"{name}: masked arrays are not supported")
    if writable and data[1]:
        raise ValueError(f"{name}: array is read-only, and this call writes it")
    return ResolvedBuffer(data[0] or 0, math.prod(shape), dtype, obj)


def _from_capsule(capsule: object, name: str, writable: bool, override: DType | None) -> ResolvedBuffer:
    tensor = _dlpack.from_capsule(capsule, name, override)
    if writable and tensor.read_only:
        tensor.owner.release()
        raise ValueError(f"{name}: DLPack tensor is read-only, and this call writes it")
    return ResolvedBuffer(tensor.address, tensor.count, tensor.dtype, tensor.owner)


def _is_capsule(obj: object) -> bool:
    return type(obj).__name__ == "PyCapsule"


def resolve(obj: object, name: str, writable: bool, dtype: DType | None = None) -> ResolvedBuffer:
    """The address, element count and dtype of buffer `obj`, passed as argument `name`.

    `writable`: the call writes the buffer (read-only memory is refused). `dtype`: an override of the
    element type, for elements of the same size. Raises TypeError for a kind of object or dtype psdp
    cannot take, ValueError for a layout it cannot (non-contiguous, read-only, not host memory).
    """
    if type(obj) is ResolvedBuffer and dtype is None:
        return obj  # made by the package itself (psdp.torch) from memory it has checked
    override = DType(dtype) if dtype is not None else None
    # Arrays first, the common case; neither a RawBuffer nor a capsule has the attribute.
    interface = getattr(obj, "__array_interface__", None)  # numpy builds it anew on every access
    if interface is not None:
        return _from_array_interface(obj, interface, name, writable, override)
    if isinstance(obj, RawBuffer):
        if writable and obj.read_only:
            raise ValueError(f"{name}: RawBuffer is read-only, and this call writes it")
        return _from_raw(obj, name, override)
    if _is_capsule(obj):
        return _from_capsule(obj, name, writable, override)
    if hasattr(obj, "__dlpack__"):
        return _from_capsule(_dlpack.export_capsule(obj, name), name, writable, override)
    raise TypeError(f"{name}: expected a numpy array (or any object with __array_interface__), an object "
                    f"with __dlpack__, a DLPack capsule or a psdp.RawBuffer; got {type(obj).__name__}")
