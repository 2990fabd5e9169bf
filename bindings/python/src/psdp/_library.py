"""Finds and loads the installed libpsdp.so, checks its version, and declares the C signature of every
function the bindings call.

The bindings drive an installed library through ctypes instead of building one at pip time: one library
build serves every Python version, pip needs no compiler or CUDA toolkit, and the library's own
dependencies (UCX, hwloc, ...) are system packages that pip cannot install anyway.

ctypes.CDLL releases the GIL for the duration of every foreign call, so a blocking collective or wait lets
the other Python threads run. psdp never calls back into Python (the bindings register no ctypes callback),
so its progress threads never need the GIL.
"""

import ctypes
import ctypes.util
import os
from typing import Any

from ._c_types import ConfigStruct, EnumC, Handle, StatusC, UniqueIdStruct
from .constants import HEADER_VERSION, version_code
from .errors import LibraryLoadError, LibraryVersionError

_ENV_VARIABLE = "PSDP_LIBRARY"
_HOW_TO_FIX = (
    "Install psdp with `cmake --install <build dir> --prefix <prefix>` into a directory the dynamic loader "
    "searches (e.g. /usr/local, then run ldconfig), or set PSDP_LIBRARY to the full path of libpsdp.so "
    "(for a build tree: <build dir>/src/api/libpsdp.so)."
)

_p = ctypes.POINTER
_int_p = _p(ctypes.c_int)
_size_p = _p(ctypes.c_size_t)
_handle_p = _p(Handle)
_void_p = ctypes.c_void_p
_size = ctypes.c_size_t
_int = ctypes.c_int

# name -> (restype, argtypes), as psdp.h declares them. `stream` arguments are void* (always NULL here:
# host memory).
_PROTOTYPES: dict[str, tuple[Any, list[Any]]] = {
    "psdp_get_version": (StatusC, [_int_p]),
    "psdp_status_string": (ctypes.c_char_p, [StatusC]),
    "psdp_get_last_error": (ctypes.c_char_p, [Handle]),
    "psdp_get_unique_id": (StatusC, [_p(UniqueIdStruct)]),
    "psdp_unique_id_to_string": (StatusC, [_p(UniqueIdStruct), ctypes.c_char_p, _size]),
    "psdp_unique_id_from_string": (StatusC, [ctypes.c_char_p, _p(UniqueIdStruct)]),
    "psdp_comm_init": (StatusC, [_int, _p(UniqueIdStruct), _int, _p(ConfigStruct), _handle_p]),
    "psdp_comm_init_from_env": (StatusC, [_p(ConfigStruct), _handle_p]),
    "psdp_comm_finalize": (StatusC, [Handle]),
    "psdp_comm_destroy": (StatusC, [Handle]),
    "psdp_comm_abort": (StatusC, [Handle]),
    "psdp_comm_rank": (StatusC, [Handle, _int_p]),
    "psdp_comm_size": (StatusC, [Handle, _int_p]),
    "psdp_comm_split": (StatusC, [Handle, _int, _int, _p(ConfigStruct), _handle_p]),
    "psdp_comm_split_layout": (StatusC, [Handle, _int, _p(ConfigStruct), _handle_p, _handle_p]),
    "psdp_comm_get_layout": (StatusC, [Handle, _int, _int_p]),
    "psdp_reduce_scatter": (StatusC, [_void_p, _void_p, _size, EnumC, EnumC, Handle, _void_p, _handle_p]),
    "psdp_all_gather": (StatusC, [_void_p, _void_p, _size, EnumC, Handle, _void_p, _handle_p]),
    "psdp_all_reduce": (StatusC, [_void_p, _void_p, _size, EnumC, EnumC, Handle, _void_p, _handle_p]),
    "psdp_broadcast": (StatusC, [_void_p, _void_p, _size, EnumC, _int, Handle, _void_p, _handle_p]),
    "psdp_barrier": (StatusC, [Handle, _handle_p]),
    "psdp_mem_alloc": (StatusC, [_p(_void_p), _size]),
    "psdp_mem_free": (StatusC, [_void_p]),
    "psdp_reduce": (StatusC, [_void_p, _void_p, _size, EnumC, EnumC, _int, Handle, _void_p, _handle_p]),
    "psdp_gather": (StatusC, [_void_p, _void_p, _size, EnumC, _int, Handle, _void_p, _handle_p]),
    "psdp_scatter": (StatusC, [_void_p, _void_p, _size, EnumC, _int, Handle, _void_p, _handle_p]),
    "psdp_all_to_all": (StatusC, [_void_p, _void_p, _size, EnumC, Handle, _void_p, _handle_p]),
    "psdp_all_gather_v": (StatusC, [_void_p, _void_p, _size_p, EnumC, Handle, _void_p, _handle_p]),
    "psdp_reduce_scatter_v": (StatusC, [_void_p, _void_p, _size_p, EnumC, EnumC, Handle, _void_p, _handle_p]),
    "psdp_send": (StatusC, [_void_p, _size, EnumC, _int, Handle, _void_p, _handle_p]),
    "psdp_recv": (StatusC, [_void_p, _size, EnumC, _int, Handle, _void_p, _handle_p]),
    "psdp_request_test": (StatusC, [Handle]),
    "psdp_request_wait": (StatusC, [Handle]),
    "psdp_request_wait_timeout": (StatusC, [Handle, ctypes.c_double]),
    "psdp_request_wait_all": (StatusC, [_handle_p, _size]),
    "psdp_request_free": (StatusC, [Handle]),
    "psdp_op_create_premul_sum": (StatusC, [Handle, _void_p, EnumC, _p(EnumC)]),
    "psdp_op_destroy": (StatusC, [Handle, EnumC]),
}


def _candidates() -> list[tuple[str, str | None]]:
    """(what was tried, the name or path to hand the loader) in the order of the search; a None name
    means that step found nothing to try. PSDP_LIBRARY, when set, is the only candidate: an explicit
    choice that fails must not silently fall back to another library."""
    explicit = os.environ.get(_ENV_VARIABLE)
    if explicit:
        return [(f"{_ENV_VARIABLE}={explicit}", explicit)]
    found = ctypes.util.find_library("psdp")
    return [
        ('ctypes.util.find_library("psdp")', found),
        ("libpsdp.so on the dynamic loader's search path", "libpsdp.so"),
        ("libpsdp.so.0 on the dynamic loader's search path", "libpsdp.so.0"),
    ]


def _open() -> tuple[ctypes.CDLL, str]:
    tried = []
    for description, name in _candidates():
        if name is None:
            tried.append(f"  - {description}: found nothing")
            continue
        try:
            return ctypes.CDLL(name), name
        except OSError as error:
            tried.append(f"  - {description}: {error}")
    if os.environ.get(_ENV_VARIABLE):
        tried.append(f"  (nothing else was tried, since {_ENV_VARIABLE} is set: unset it to search the loader's path)")
    raise LibraryLoadError("psdp: cannot load libpsdp.so. Tried:\n" + "\n".join(tried) + "\n" + _HOW_TO_FIX)


def _declare(library: ctypes.CDLL, name: str) -> None:
    for function, (restype, argtypes) in _PROTOTYPES.items():
        try:
            symbol = getattr(library, function)
        except AttributeError:
            raise LibraryVersionError(
                f"psdp: {name} has no {function}, which psdp {'.'.join(map(str, HEADER_VERSION))} declares: "
                f"a broken build? {_HOW_TO_FIX}"
            ) from None
        symbol.restype = restype
        symbol.argtypes = argtypes


def _check_version(library: ctypes.CDLL, name: str) -> tuple[int, int, int]:
    try:
        get_version = library.psdp_get_version
    except AttributeError:
        raise LibraryVersionError(f"psdp: {name} has no psdp_get_version: it is not libpsdp.so. "
                                  f"{_HOW_TO_FIX}") from None
    get_version.restype, get_version.argtypes = _PROTOTYPES["psdp_get_version"]
    code = ctypes.c_int()
    if get_version(ctypes.byref(code)) != 0:
        raise LibraryVersionError(f"psdp: psdp_get_version failed in {name}")
    found = (code.value // 10000, code.value // 100 % 100, code.value % 100)
    wanted = ".".join(map(str, HEADER_VERSION))
    # A newer library of the same major version takes these bindings' calls, and backfills the config fields
    # they do not know (psdp.h's rule for extensible structs); another major version may have changed the
    # calls, and an older library may lack some of them.
    if found[0] != HEADER_VERSION[0] or code.value < version_code(*HEADER_VERSION):
        raise LibraryVersionError(
            f"psdp: {name} is version {'.'.join(map(str, found))}; these bindings need {HEADER_VERSION[0]}.x, "
            f"at least {wanted}. Install a matching psdp, or point PSDP_LIBRARY at one."
        )
    return found


def _load() -> tuple[ctypes.CDLL, str, tuple[int, int, int]]:
    library, name = _open()
    version = _check_version(library, name)
    _declare(library, name)
    return library, name, version


lib, library_name, library_version = _load()


def last_error(comm: int | None) -> str:
    """psdp_get_last_error: the communicator's store for a live communicator handle, else this thread's."""
    text = lib.psdp_get_last_error(comm)
    return text.decode("utf-8", "replace") if text else ""


def status_string(status: int) -> str:
    """psdp_status_string."""
    return lib.psdp_status_string(status).decode()
