"""Reads DLPack tensors: "dltensor" and "dltensor_versioned" PyCapsules, parsed with ctypes.

The structs follow dlpack.h (v0.8 for DLManagedTensor, v1.x for DLManagedTensorVersioned). A capsule is
consumed as the DLPack protocol asks: renamed to "used_dltensor[_versioned]", after which the consumer, not
the capsule, calls the tensor's deleter once it no longer needs the memory (`ConsumedTensor.release`).
"""

import ctypes
from dataclasses import dataclass
from typing import Any

from .constants import DType

K_DL_CPU = 1
_DEVICE_NAMES = {1: "CPU", 2: "CUDA", 3: "CUDA host", 10: "ROCm", 11: "ROCm host", 13: "CUDA managed"}
_READ_ONLY_FLAG = 1  # DLPACK_FLAG_BITMASK_READ_ONLY

# (DLDataTypeCode, bits) -> psdp dtype. Codes: kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4.
_DTYPES = {
    (0, 8): DType.INT8,
    (1, 8): DType.UINT8,
    (0, 32): DType.INT32,
    (1, 32): DType.UINT32,
    (0, 64): DType.INT64,
    (1, 64): DType.UINT64,
    (2, 16): DType.FLOAT16,
    (4, 16): DType.BFLOAT16,
    (2, 32): DType.FLOAT32,
    (2, 64): DType.FLOAT64,
}


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),  # NULL: compact row-major
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


_capsule_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_is_valid.restype, _capsule_is_valid.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]
_capsule_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_get_pointer.restype, _capsule_get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
_capsule_set_name = ctypes.pythonapi.PyCapsule_SetName
_capsule_set_name.restype, _capsule_set_name.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_void_p]


_libc = ctypes.CDLL(None)
_libc.strdup.restype, _libc.strdup.argtypes = ctypes.c_void_p, [ctypes.c_char_p]


def _static_string(text: bytes) -> int:
    """A C string that is never freed: PyCapsule_SetName keeps the pointer, and the producer's capsule
    destructor reads the name whenever the capsule dies, possibly late in interpreter exit."""
    return _libc.strdup(text)


_USED_NAMES = {b"dltensor": _static_string(b"used_dltensor"),
               b"dltensor_versioned": _static_string(b"used_dltensor_versioned")}
# The deleter is a C function pointer of the producer, called here with the GIL held (PYFUNCTYPE) since
# some producers' deleters touch Python objects; this calls C from Python, never the other way round.
_Deleter = ctypes.PYFUNCTYPE(None, ctypes.c_void_p)


class ConsumedTensor:
    """Owns a consumed DLPack tensor: its memory stays valid until `release` calls the producer's deleter."""

    def __init__(self, managed: int, deleter: int | None) -> None:
        self._managed = managed
        self._deleter = deleter

    def release(self) -> None:
        """Hands the tensor back to its producer (idempotent)."""
        deleter, self._deleter = self._deleter, None
        if deleter:
            _Deleter(deleter)(self._managed)

    def __del__(self) -> None:
        self.release()


@dataclass(frozen=True)
class DLPackBuffer:
    """A DLPack tensor resolved to what a psdp call needs."""

    address: int
    count: int
    dtype: DType
    read_only: bool
    owner: ConsumedTensor


def _element_count(tensor: DLTensor, name: str) -> int:
    """The number of elements, refusing layouts that are not one compact row-major block."""
    shape = [tensor.shape[i] for i in range(tensor.ndim)]
    count = 1
    for extent in shape:
        count *= extent
    if count == 0 or not tensor.strides:
        return count
    expected = 1
    for i in reversed(range(tensor.ndim)):
        # A dimension of extent 1 may carry any stride without making the memory non-compact.
        if shape[i] != 1 and tensor.strides[i] != expected:
            strides = [tensor.strides[j] for j in range(tensor.ndim)]
            raise ValueError(f"{name}: DLPack tensor of shape {shape} has non-compact strides {strides} "
                             "(in elements); psdp needs one contiguous row-major block")
        expected *= shape[i]
    return count


def _dtype_of(tensor: DLTensor, name: str, override: DType | None) -> DType:
    code, bits, lanes = tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes
    if lanes != 1:
        raise TypeError(f"{name}: DLPack dtype with {lanes} lanes is not supported")
    if override is not None:
        if bits != override.itemsize * 8:
            raise TypeError(f"{name}: dtype={override.name} has {override.itemsize * 8}-bit elements, "
                            f"the DLPack tensor {bits}-bit ones")
        return override
    dtype = _DTYPES.get((code, bits))
    if dtype is None:
        raise TypeError(f"{name}: DLPack dtype (code {code}, {bits} bits) is not one psdp supports "
                        f"({', '.join(d.name.lower() for d in DType)})")
    return dtype


def from_capsule(capsule: object, name: str, override: DType | None) -> DLPackBuffer:
    """Parses and consumes a DLPack PyCapsule. Nothing is consumed when the tensor is refused."""
    managed: DLManagedTensor | DLManagedTensorVersioned
    if _capsule_is_valid(capsule, b"dltensor"):
        capsule_name = b"dltensor"
        managed = DLManagedTensor.from_address(_capsule_get_pointer(capsule, capsule_name))
        read_only = False  # the unversioned protocol cannot say; the producer exported it for writing
    elif _capsule_is_valid(capsule, b"dltensor_versioned"):
        capsule_name = b"dltensor_versioned"
        managed = DLManagedTensorVersioned.from_address(_capsule_get_pointer(capsule, capsule_name))
        if managed.version.major != 1:
            raise TypeError(f"{name}: DLPack version {managed.version.major}.{managed.version.minor} "
                            "is not supported (1.x is)")
        read_only = bool(managed.flags & _READ_ONLY_FLAG)
    elif _capsule_is_valid(capsule, b"used_dltensor") or _capsule_is_valid(capsule, b"used_dltensor_versioned"):
        raise ValueError(f"{name}: this DLPack capsule was consumed already; a capsule can be used once")
    else:
        raise TypeError(f"{name}: a PyCapsule that is not a DLPack tensor")

    tensor = managed.dl_tensor
    if tensor.device.device_type != K_DL_CPU:
        device = _DEVICE_NAMES.get(tensor.device.device_type, f"type {tensor.device.device_type}")
        raise ValueError(f"{name}: DLPack tensor on a {device} device; these bindings take host (CPU) memory")
    dtype = _dtype_of(tensor, name, override)
    count = _element_count(tensor, name)
    address = (tensor.data or 0) + tensor.byte_offset

    _capsule_set_name(capsule, _USED_NAMES[capsule_name])
    owner = ConsumedTensor(ctypes.addressof(managed), managed.deleter)
    return DLPackBuffer(address, count, dtype, read_only, owner)


def export_capsule(obj: Any, name: str) -> object:
    """Calls obj.__dlpack__ for host memory, asking for a versioned capsule (which says whether the memory
    is read-only) where the producer knows the newer protocol."""
    device = obj.__dlpack_device__() if hasattr(obj, "__dlpack_device__") else (K_DL_CPU, 0)
    if int(device[0]) != K_DL_CPU:
        kind = _DEVICE_NAMES.get(int(device[0]), f"type {device[0]}")
        raise ValueError(f"{name}: DLPack tensor on a {kind} device; these bindings take host (CPU) memory")
    for kwargs in ({"stream": None, "max_version": (1, 0)}, {"stream": None}, {}):
        try:
            return obj.__dlpack__(**kwargs)
        except TypeError:
            continue  # an older producer: it does not take these keywords
    raise TypeError(f"{name}: {type(obj).__name__}.__dlpack__ accepts none of the protocol's signatures")
