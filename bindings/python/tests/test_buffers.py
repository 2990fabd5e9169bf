"""psdp.buffers.resolve: what each kind of buffer becomes, and what is refused with which message."""

import ctypes
import sys

import numpy as np
import pytest

import psdp
from psdp.buffers import resolve
from psdp.premul_sum import pack_scalar

NUMPY_DTYPES = [(np.int8, psdp.INT8), (np.uint8, psdp.UINT8), (np.int32, psdp.INT32), (np.uint32, psdp.UINT32),
                (np.int64, psdp.INT64), (np.uint64, psdp.UINT64), (np.float16, psdp.FLOAT16),
                (np.float32, psdp.FLOAT32), (np.float64, psdp.FLOAT64)]


class DLPackOnly:
    def __init__(self, array: np.ndarray, device: tuple[int, int] = (1, 0)) -> None:
        self._array, self._device = array, device

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._device


@pytest.mark.parametrize("numpy_dtype,dtype", NUMPY_DTYPES)
def test_numpy_arrays_of_every_dtype(numpy_dtype, dtype) -> None:
    array = np.zeros((3, 4), numpy_dtype)
    buffer = resolve(array, "sendbuf", writable=True)
    assert (buffer.address, buffer.count, buffer.dtype) == (array.ctypes.data, 12, dtype)
    assert buffer.owner is array


@pytest.mark.parametrize("numpy_dtype,dtype", NUMPY_DTYPES)
def test_dlpack_of_every_dtype(numpy_dtype, dtype) -> None:
    array = np.zeros((2, 5), numpy_dtype)
    for source in (array.__dlpack__(), DLPackOnly(array)):
        buffer = resolve(source, "recvbuf", writable=True)
        assert (buffer.address, buffer.count, buffer.dtype) == (array.ctypes.data, 10, dtype)
        buffer.release()


def test_offsets_and_shapes() -> None:
    base = np.arange(10, dtype=np.float32)
    assert resolve(base[3:], "b", writable=False).address == base.ctypes.data + 12
    assert resolve(base[3:].__dlpack__(), "b", writable=False).address == base.ctypes.data + 12
    assert resolve(np.float64(2.0).reshape(()), "b", writable=False).count == 1
    assert resolve(np.zeros((0, 3), np.int32), "b", writable=True).count == 0
    column = np.zeros((4, 1), np.int32)[:, :1]  # a dimension of extent 1 with any stride is still compact
    assert resolve(column, "b", writable=True).count == 4


def test_dlpack_capsule_is_consumed_once_and_released() -> None:
    array = np.zeros(4, np.int32)
    before = sys.getrefcount(array)
    capsule = array.__dlpack__()
    buffer = resolve(capsule, "b", writable=True)
    with pytest.raises(ValueError, match="consumed already"):
        resolve(capsule, "b", writable=True)
    del capsule
    assert sys.getrefcount(array) > before  # the consumed tensor still holds the array
    buffer.release()
    assert sys.getrefcount(array) == before


def test_refused_capsule_is_not_consumed() -> None:
    capsule = np.zeros(4, np.int32).__dlpack__()
    with pytest.raises(TypeError, match="dtype=FLOAT64"):
        resolve(capsule, "b", writable=True, dtype=psdp.FLOAT64)
    assert resolve(capsule, "b", writable=True).count == 4


def test_non_contiguous_is_refused() -> None:
    strided = np.zeros(8, np.float32)[::2]
    with pytest.raises(ValueError, match="sendbuf: array of shape .* is not C-contiguous"):
        resolve(strided, "sendbuf", writable=False)
    with pytest.raises(ValueError, match="recvbuf: DLPack tensor .* non-compact strides"):
        resolve(strided.__dlpack__(), "recvbuf", writable=True)
    with pytest.raises(ValueError, match="not C-contiguous"):
        resolve(np.zeros((3, 4), np.int32).T, "sendbuf", writable=False)


def test_read_only_output_is_refused() -> None:
    frozen = np.zeros(4, np.float32)
    frozen.setflags(write=False)
    assert resolve(frozen, "sendbuf", writable=False).count == 4
    with pytest.raises(ValueError, match="recvbuf: array is read-only"):
        resolve(frozen, "recvbuf", writable=True)
    try:
        capsule = frozen.__dlpack__(max_version=(1, 0))
    except TypeError:
        pytest.skip("this numpy has no versioned DLPack, which says read-only")
    with pytest.raises(ValueError, match="recvbuf: DLPack tensor is read-only"):
        resolve(capsule, "recvbuf", writable=True)
    with pytest.raises(ValueError, match="read-only"):
        resolve(psdp.RawBuffer(frozen.ctypes.data, 4, psdp.FLOAT32, read_only=True), "recvbuf", writable=True)


def test_unsupported_dtypes_are_refused_with_the_argument_named() -> None:
    for array in (np.zeros(4, np.complex64), np.zeros(4, np.bool_), np.zeros(4, np.int16)):
        with pytest.raises(TypeError, match="sendbuf: array dtype .* is not one psdp supports"):
            resolve(array, "sendbuf", writable=False)
    with pytest.raises(TypeError, match="big-endian"):
        resolve(np.zeros(4, ">f4"), "sendbuf", writable=False)
    with pytest.raises(TypeError, match="sendbuf: DLPack dtype"):
        resolve(np.zeros(4, np.int16).__dlpack__(), "sendbuf", writable=False)


def test_dtype_override_reinterprets_elements_of_the_same_size() -> None:
    bits = np.zeros(6, np.uint16)
    assert resolve(bits, "b", writable=True, dtype=psdp.BFLOAT16).dtype == psdp.BFLOAT16
    assert resolve(bits.__dlpack__(), "b", writable=True, dtype=psdp.BFLOAT16).dtype == psdp.BFLOAT16
    with pytest.raises(TypeError, match="b: dtype=FLOAT32 has 4-byte elements"):
        resolve(bits, "b", writable=True, dtype=psdp.FLOAT32)
    with pytest.raises(TypeError, match="bfloat16: pass 2-byte data with dtype=psdp.BFLOAT16"):
        resolve(np.zeros(2, np.int16), "b", writable=True)


def test_memory_not_on_the_host_is_refused() -> None:
    with pytest.raises(ValueError, match="sendbuf: DLPack tensor on a CUDA device"):
        resolve(DLPackOnly(np.zeros(4, np.float32), (2, 0)), "sendbuf", writable=False)


def test_raw_buffers() -> None:
    memory = (ctypes.c_double * 5)()
    buffer = resolve(psdp.RawBuffer(ctypes.addressof(memory), 5, psdp.FLOAT64, owner=memory), "b", writable=True)
    assert (buffer.address, buffer.count, buffer.dtype, buffer.owner) == (ctypes.addressof(memory), 5,
                                                                          psdp.FLOAT64, memory)
    with pytest.raises(ValueError, match="negative"):
        resolve(psdp.RawBuffer(ctypes.addressof(memory), -1, psdp.FLOAT64), "b", writable=True)


def test_other_objects_are_refused() -> None:
    for thing in ([1.0, 2.0], b"bytes", 3.0):
        with pytest.raises(TypeError, match="recvbuf: expected a numpy array"):
            resolve(thing, "recvbuf", writable=True)


@pytest.mark.parametrize("value,dtype,expected", [
    (1.0, psdp.BFLOAT16, b"\x80\x3f"),
    (1.00390625, psdp.BFLOAT16, b"\x80\x3f"),  # halfway between two bfloat16: to even
    (1.01171875, psdp.BFLOAT16, b"\x82\x3f"),  # halfway: to even, upwards
    (0.5, psdp.FLOAT16, np.float16(0.5).tobytes()),
    (-3, psdp.INT8, b"\xfd"),
    (2.5, psdp.FLOAT64, np.float64(2.5).tobytes()),
])
def test_premul_scalars_are_packed_as_one_element(value, dtype, expected) -> None:
    assert pack_scalar(value, dtype) == expected


def test_premul_scalars_that_do_not_fit_are_refused() -> None:
    with pytest.raises(ValueError, match="does not fit uint8"):
        pack_scalar(300, psdp.UINT8)
    with pytest.raises(TypeError):
        pack_scalar(1.5, psdp.INT32)
