"""torch tensors and reduce ops as psdp buffers and ops.

Data-moving calls (broadcast, gathers, scatter, all-to-all, send/recv) take a tensor of any dtype: a dtype psdp
has is passed as itself, any other (bool, int16, complex, float8, ...) as its bytes. Reductions need a psdp
dtype; complex tensors reduce as their real and imaginary parts for the ops that act on them separately (sum,
average, premul-sum by a real factor), as NCCL's backend does.
"""

from __future__ import annotations

import torch
from torch._C._distributed_c10d import ReduceOp

from ..buffers import ResolvedBuffer
from ..constants import DType, Op
from ..errors import UnsupportedError

_DTYPES = {
    torch.int8: DType.INT8,
    torch.uint8: DType.UINT8,
    torch.int32: DType.INT32,
    torch.uint32: DType.UINT32,
    torch.int64: DType.INT64,
    torch.uint64: DType.UINT64,
    torch.float16: DType.FLOAT16,
    torch.bfloat16: DType.BFLOAT16,
    torch.float32: DType.FLOAT32,
    torch.float64: DType.FLOAT64,
}
_COMPLEX_PARTS = {torch.complex64: DType.FLOAT32, torch.complex128: DType.FLOAT64}

# Keyed by the RedOpType's value: hashing the pybind enum itself costs more than the rest of the lookup.
_OPS = {
    ReduceOp.SUM.value: Op.SUM,
    ReduceOp.PRODUCT.value: Op.PROD,
    ReduceOp.MIN.value: Op.MIN,
    ReduceOp.MAX.value: Op.MAX,
    ReduceOp.AVG.value: Op.AVG,
}
# Ops that act on a complex number's parts separately: the rest (product, min, max) do not.
_PARTWISE_KINDS = (ReduceOp.SUM, ReduceOp.AVG, ReduceOp.PREMUL_SUM)


def check_tensor(tensor: object, name: str, index: int | None = None) -> torch.Tensor:
    """`tensor` if psdp can use its memory as it is: a dense, contiguous CPU tensor. `name` (with `[index]`)
    is the argument named in the error."""
    if type(tensor) is torch.Tensor and tensor.is_cpu and tensor.layout is torch.strided and tensor.is_contiguous():
        return tensor  # the common case, checked in one pass: this runs for every tensor of every call
    if index is not None:
        name = f"{name}[{index}]"
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(tensor).__name__}")
    if tensor.device.type != "cpu":
        raise ValueError(f"{name}: the psdp backend takes CPU tensors, got one on {tensor.device} (give "
                         f"another device its own backend, e.g. init_process_group('cpu:psdp,cuda:nccl'))")
    if tensor.layout != torch.strided:
        raise ValueError(f"{name}: the psdp backend takes dense tensors, got layout {tensor.layout}")
    if not tensor.is_contiguous():
        raise ValueError(f"{name}: tensor of shape {tuple(tensor.shape)} and strides {tensor.stride()} is not "
                         f"contiguous; pass tensor.contiguous()")
    return tensor


def check_tensors(tensors: list[torch.Tensor], name: str) -> list[torch.Tensor]:
    return [check_tensor(t, name, i) for i, t in enumerate(tensors)]


# The buffers are made as ResolvedBuffer directly: a checked tensor needs none of the checks resolve() makes of
# other objects, and this runs for every tensor of every call.


def data_buffer(tensor: torch.Tensor) -> ResolvedBuffer:
    """The tensor's elements for a call that only moves them."""
    dtype = _DTYPES.get(tensor.dtype)
    if dtype is None:
        return ResolvedBuffer(tensor.data_ptr(), tensor.numel() * tensor.element_size(), DType.UINT8, tensor)
    return ResolvedBuffer(tensor.data_ptr(), tensor.numel(), dtype, tensor)


def reduce_buffer(tensor: torch.Tensor, reduce_op: ReduceOp, name: str) -> ResolvedBuffer:
    """The tensor's elements for a reduction by `reduce_op`."""
    dtype = _DTYPES.get(tensor.dtype)
    if dtype is not None:
        return ResolvedBuffer(tensor.data_ptr(), tensor.numel(), dtype, tensor)
    parts = _COMPLEX_PARTS.get(tensor.dtype)
    if parts is not None:
        if reduce_op.op not in _PARTWISE_KINDS:
            raise UnsupportedError(f"{name}: {tensor.dtype} tensors reduce by sum, avg or premul_sum only, "
                                   f"not {reduce_op.op}")
        return ResolvedBuffer(tensor.data_ptr(), 2 * tensor.numel(), parts, tensor)
    raise TypeError(f"{name}: psdp reduces {', '.join(str(d) for d in [*_DTYPES, *_COMPLEX_PARTS])}; got "
                    f"{tensor.dtype}")


def op_kind(reduce_op: ReduceOp) -> Op | None:
    """The psdp op of a torch reduce op; None for premul-sum, which needs its factor; raises for the bitwise
    ops, which psdp has not."""
    kind = reduce_op.op
    op = _OPS.get(kind.value)
    if op is not None or kind == ReduceOp.PREMUL_SUM:
        return op
    raise UnsupportedError(f"op: psdp reduces by sum, product, min, max, avg and premul_sum; not {kind}")


def premul_factor(reduce_op: ReduceOp) -> float:
    """The scalar of a premul-sum op: a number or a one-element tensor (read now, on the host)."""
    factor = reduce_op.factor
    if isinstance(factor, torch.Tensor):
        if factor.numel() != 1:
            raise ValueError(f"op: a premul_sum factor tensor must hold one element, it holds {factor.numel()}")
        factor = factor.item()
    if isinstance(factor, complex):
        raise UnsupportedError("op: psdp's premul_sum takes a real factor")
    return factor
