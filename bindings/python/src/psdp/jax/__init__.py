"""psdp.jax: psdp's all-reduce, reduce-scatter and all-gather inside jit-compiled JAX programs on the CPU.

    import jax, jax.numpy as jnp, psdp, psdp.jax

    comm = psdp.Communicator.from_env()          # one process per rank (psdp-run, torchrun, mpirun, srun)
    key = psdp.jax.register(comm)                # programs name the communicator by this key

    @jax.jit
    def step(grads, token):
        grads, token = psdp.jax.all_reduce(grads, token, comm=key, op=psdp.AVG)
        return grads, token

    token = psdp.jax.token()
    grads, token = step(jnp.ones(1024), token)

The collectives are XLA FFI custom calls (handlers.cc, built on first use: see psdp.jax.build) that run the
blocking psdp call on the buffers XLA hands them. Every rank must run them in the same order; the `token` each
takes and returns is what makes XLA keep that order: pass the token one call returns to the next (within a
program and from one program to the next). Two collectives given the same token may run in either order.

The communicator is named by a registry key, an attribute of the compiled program, so programs stay cacheable;
running one whose key is not registered in this process (or whose communicator was destroyed) fails naming the
key. Failures of psdp surface as the XLA runtime error of the program, carrying psdp's message.
Not supported: vmap and autodiff of the collectives, and GPU arrays.
"""

from __future__ import annotations

import ctypes
import itertools
import operator
import threading

import jax
import jax.numpy as jnp
import numpy as np

from ..communicator import Communicator
from ..constants import Op
from . import build

_REDUCIBLE = {np.dtype(t) for t in (np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64, np.float16,
                                    jnp.bfloat16, np.float32, np.float64)}
_TARGETS = {"psdp_all_reduce": "PsdpAllReduce", "psdp_reduce_scatter": "PsdpReduceScatter",
            "psdp_all_gather": "PsdpAllGather"}

_lock = threading.Lock()
_handlers: ctypes.CDLL | None = None
_registered: dict[int, Communicator] = {}
_keys = itertools.count(1)


def _load() -> ctypes.CDLL:
    """Loads (building if needed) the handler library and registers its targets with XLA, once."""
    global _handlers
    with _lock:
        if _handlers is None:
            library = ctypes.CDLL(str(build.library_path()))
            library.psdp_jax_register.argtypes = [ctypes.c_int64, ctypes.c_void_p]
            library.psdp_jax_unregister.argtypes = [ctypes.c_int64]
            for target, symbol in _TARGETS.items():
                jax.ffi.register_ffi_target(target, jax.ffi.pycapsule(getattr(library, symbol)), platform="cpu")
            _handlers = library
        return _handlers


def register(comm: Communicator) -> int:
    """Makes `comm` usable by the collectives of this module; returns the key to pass as their `comm=`.
    The registration ends when the communicator is destroyed (or at unregister)."""
    if not isinstance(comm, Communicator):
        raise TypeError(f"comm: expected a psdp.Communicator, got {type(comm).__name__}")
    handle = comm._handle_for_call()
    library = _load()
    key = next(_keys)
    library.psdp_jax_register(key, handle)
    _registered[key] = comm
    comm._on_destroy(lambda: unregister(key))
    return key


def unregister(key: int) -> None:
    """Ends registration `key`: programs naming it fail from now on. Unknown keys are ignored."""
    if _registered.pop(key, None) is not None and _handlers is not None:
        _handlers.psdp_jax_unregister(key)


def token() -> jax.Array:
    """A fresh ordering token (a uint32 scalar) for the first collective."""
    return jnp.zeros((), jnp.uint32)


def _communicator(key: int) -> Communicator:
    try:
        return _registered[operator.index(key)]
    except KeyError:
        raise ValueError(f"comm: no communicator is registered under key {key}; use psdp.jax.register") from None


def _op_value(op: Op | int) -> int:
    value = operator.index(op)
    if value not in {o.value for o in Op}:
        raise ValueError(f"op: expected psdp.SUM, PROD, MIN, MAX or AVG, got {op!r}")
    return value


def _check_reducible(x: jax.Array, call: str) -> None:
    if np.dtype(x.dtype) not in _REDUCIBLE:
        raise TypeError(f"{call}: psdp reduces {', '.join(sorted(str(d) for d in _REDUCIBLE))}; got {x.dtype}")


def _check_token(order: jax.Array) -> None:
    if jnp.shape(order) != () or jnp.result_type(order) != jnp.uint32:
        raise TypeError(f"token: expected the uint32 scalar of psdp.jax.token() or of the previous collective, "
                        f"got {jnp.result_type(order)}{list(jnp.shape(order))}")


def _call(target: str, x: jax.Array, order: jax.Array, shape: tuple[int, ...], **attrs: int):
    _load()
    _check_token(order)
    call = jax.ffi.ffi_call(target, (jax.ShapeDtypeStruct(shape, x.dtype), jax.ShapeDtypeStruct((), jnp.uint32)),
                            has_side_effect=True)
    return call(x, order, **{name: np.int64(value) for name, value in attrs.items()})


def all_reduce(x: jax.Array, token: jax.Array, *, comm: int, op: Op | int = Op.SUM) -> tuple[jax.Array, jax.Array]:
    """(the reduction of every rank's x, the next token)."""
    _communicator(comm)
    x = jnp.asarray(x)
    _check_reducible(x, "all_reduce")
    return _call("psdp_all_reduce", x, token, x.shape, comm=comm, op=_op_value(op))


def reduce_scatter(x: jax.Array, token: jax.Array, *, comm: int,
                   op: Op | int = Op.SUM) -> tuple[jax.Array, jax.Array]:
    """(block `rank` along axis 0 of the reduction of every rank's x, the next token). x's first dimension
    must divide by the number of ranks."""
    size = _communicator(comm).size
    x = jnp.asarray(x)
    _check_reducible(x, "reduce_scatter")
    if x.ndim == 0 or x.shape[0] % size:
        raise ValueError(f"reduce_scatter: x of shape {x.shape} has no first dimension dividing by {size} ranks")
    return _call("psdp_reduce_scatter", x, token, (x.shape[0] // size, *x.shape[1:]), comm=comm,
                 op=_op_value(op))


def all_gather(x: jax.Array, token: jax.Array, *, comm: int) -> tuple[jax.Array, jax.Array]:
    """(every rank's x concatenated along axis 0 in rank order, the next token); a scalar x gives a vector.
    Any dtype."""
    size = _communicator(comm).size
    x = jnp.asarray(x)
    shape = (size,) if x.ndim == 0 else (size * x.shape[0], *x.shape[1:])
    return _call("psdp_all_gather", x, token, shape, comm=comm)


__all__ = ["all_gather", "all_reduce", "build", "reduce_scatter", "register", "token", "unregister"]
