"""One rank of a multi-process test, started by psdp-run: `python3 mp_worker.py SCENARIO`.

Every scenario checks its results exactly (integer-valued data, exact in float32 too) and raises on the
first difference; the rank then exits non-zero and psdp-run ends the others. A rank that passes prints
"rank R: SCENARIO ok".
"""

import ctypes
import gc
import sys

import numpy as np

import psdp
from psdp import _dlpack

from checks import expect, expect_raises

DTYPES = (np.int32, np.float32)


def expect_equal(got: np.ndarray, want: np.ndarray, what: str) -> None:
    if not np.array_equal(got, want):
        raise AssertionError(f"{what}: got {got.tolist()}, want {want.tolist()}")


def rank_data(rank: int, n: int, dtype) -> np.ndarray:
    """Rank-dependent small integers: sums and products over 3 ranks stay exact."""
    return (np.arange(n) % 5 + rank + 1).astype(dtype)


def all_ranks(comm: psdp.Communicator, n: int, dtype) -> list[np.ndarray]:
    return [rank_data(r, n, dtype) for r in range(comm.size)]


# --- every collective, blocking -------------------------------------------------------------------------


def check_reductions(comm: psdp.Communicator, dtype) -> None:
    n, size, rank = 7, comm.size, comm.rank
    data = all_ranks(comm, n, dtype)
    mine = data[rank]
    for op, want in ((psdp.SUM, sum(data)), (psdp.PROD, np.prod(data, axis=0)), (psdp.MIN, np.min(data, axis=0)),
                     (psdp.MAX, np.max(data, axis=0))):
        out = np.zeros(n, dtype)
        comm.all_reduce(mine, out, op)
        expect_equal(out, want.astype(dtype), f"all_reduce {op.name} {np.dtype(dtype)}")
    avg_input = (size * (np.arange(n) + rank)).astype(dtype)  # the average is an integer
    out = np.zeros(n, dtype)
    comm.all_reduce(avg_input, out, psdp.AVG)
    expect_equal(out, (size * np.arange(n) + sum(range(size))).astype(dtype), "all_reduce AVG")
    in_place = mine.copy()
    comm.all_reduce(in_place, in_place)
    expect_equal(in_place, sum(data).astype(dtype), "all_reduce in place")

    block = 3
    send = np.concatenate([rank_data(rank, block, dtype) * (b + 1) for b in range(size)]).astype(dtype)
    out = np.zeros(block, dtype)
    comm.reduce_scatter(send, out)
    want = sum(rank_data(r, block, dtype) * (rank + 1) for r in range(size)).astype(dtype)
    expect_equal(out, want, "reduce_scatter")

    root = 1 % size
    out = np.zeros(n, dtype) if rank == root else None
    comm.reduce(mine, out, psdp.MAX, root)
    if rank == root:
        expect_equal(out, np.max(data, axis=0).astype(dtype), "reduce MAX")

    counts = [r + 1 for r in range(size)]
    send = np.concatenate([np.full(counts[b], 10 * (b + 1) + rank, dtype) for b in range(size)])
    out = np.zeros(counts[rank], dtype)
    comm.reduce_scatter_v(send, out, counts)
    expect_equal(out, np.full(counts[rank], size * 10 * (rank + 1) + sum(range(size)), dtype), "reduce_scatter_v")


def check_data_movement(comm: psdp.Communicator, dtype) -> None:
    n, size, rank = 5, comm.size, comm.rank
    data = all_ranks(comm, n, dtype)
    mine = data[rank]

    out = np.zeros(size * n, dtype)
    comm.all_gather(mine, out)
    expect_equal(out, np.concatenate(data), "all_gather")

    root = size - 1
    out = np.zeros(n, dtype)
    comm.broadcast(mine if rank == root else None, out, root)
    expect_equal(out, data[root], "broadcast")

    out = np.zeros(size * n, dtype) if rank == 0 else None
    comm.gather(mine, out, 0)
    if rank == 0:
        expect_equal(out, np.concatenate(data), "gather")

    send = np.arange(size * n, dtype=dtype) + 100 if rank == root else None
    out = np.zeros(n, dtype)
    comm.scatter(send, out, root)
    expect_equal(out, (np.arange(n) + 100 + rank * n).astype(dtype), "scatter")

    send = np.array([100 * rank + b for b in range(size) for _ in range(2)], dtype)
    out = np.zeros(2 * size, dtype)
    comm.all_to_all(send, out)
    expect_equal(out, np.array([100 * b + rank for b in range(size) for _ in range(2)], dtype), "all_to_all")

    counts = [2 * r + 1 for r in range(size)]
    out = np.zeros(sum(counts), dtype)
    comm.all_gather_v(np.full(counts[rank], rank + 1, dtype), out, counts)
    expect_equal(out, np.concatenate([np.full(c, r + 1, dtype) for r, c in enumerate(counts)]), "all_gather_v")

    right, left = (rank + 1) % size, (rank - 1) % size
    out = np.zeros(n, dtype)
    if rank % 2 == 0:  # an order that cannot deadlock for any size, blocking sends included
        comm.send(mine, right)
        comm.recv(out, left)
    else:
        comm.recv(out, left)
        comm.send(mine, right)
    expect_equal(out, data[left], "send/recv around the ring")
    comm.barrier()


def scenario_collectives(comm: psdp.Communicator) -> None:
    for dtype in DTYPES:
        check_reductions(comm, dtype)
        check_data_movement(comm, dtype)


# --- nonblocking ------------------------------------------------------------------------------------------


def scenario_nonblocking(comm: psdp.Communicator) -> None:
    n, size, rank = 1000, comm.size, comm.rank
    data = [rank_data(r, n, np.float32) for r in range(size)]
    sums = [np.zeros(n, np.float32) for _ in range(4)]
    gathered = np.zeros(size * n, np.int32)
    broadcast = np.zeros(n, np.int32)
    requests = [comm.all_reduce(data[rank] * (i + 1), sums[i], blocking=False) for i in range(4)]
    requests.append(comm.all_gather(rank_data(rank, n, np.int32), gathered, blocking=False))
    requests.append(comm.broadcast(np.arange(n, dtype=np.int32) if rank == 0 else None, broadcast, 0,
                                   blocking=False))
    requests.append(comm.barrier(blocking=False))
    expect(all(isinstance(r, psdp.Request) for r in requests), "blocking=False returns requests")
    for request in reversed(requests):
        expect(request.wait() is True, "wait returns True")
        expect(request.done and request.test(), "a completed request tests complete")
    for i in range(4):
        expect_equal(sums[i], sum(data) * (i + 1), f"nonblocking all_reduce {i}")
    expect_equal(gathered, np.concatenate([rank_data(r, n, np.int32) for r in range(size)]), "nonblocking all_gather")
    expect_equal(broadcast, np.arange(n, dtype=np.int32), "nonblocking broadcast")

    # A point-to-point exchange with every rank, this one included, posted before any wait.
    received = [np.zeros(3, np.int64) for _ in range(size)]
    posted = [comm.recv(received[p], p, blocking=False) for p in range(size)]
    posted += [comm.send(np.full(3, 10 * rank + p, np.int64), p, blocking=False) for p in range(size)]
    for request in reversed(posted):
        request.wait(timeout=60)
    for p in range(size):
        expect_equal(received[p], np.full(3, 10 * p + rank, np.int64), f"nonblocking recv from {p}")

    # Many at once, waited as one (psdp.wait_all), some of them twice over and one already complete.
    outs = [np.zeros(n, np.float32) for _ in range(8)]
    many = [comm.all_reduce(data[rank] * (i + 1), outs[i], blocking=False) for i in range(8)]
    many[3].wait()
    psdp.wait_all(many + many[:2])
    expect(all(r.done for r in many), "wait_all completes every request")
    for i in range(8):
        expect_equal(outs[i], sum(data) * (i + 1), f"all_reduce {i} waited by wait_all")
    psdp.wait_all([])

    # A request dropped while in flight (its input a temporary): the communicator keeps it, and its buffers,
    # until it completes, and frees it then.
    comm.all_reduce(np.ones(n, np.float32), np.zeros(n, np.float32), blocking=False)
    gc.collect()
    out = np.zeros(n, np.float32)
    comm.all_reduce(np.ones(n, np.float32), out, blocking=False).wait()
    expect_equal(out, np.full(n, size, np.float32), "after a dropped request")


# --- the other kinds of buffers ------------------------------------------------------------------------


class DLPackOnly:
    """Exposes a numpy array through __dlpack__ alone, as a framework tensor does."""

    def __init__(self, array: np.ndarray) -> None:
        self._array = array

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype, _capsule_new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_DLTENSOR_NAME = ctypes.create_string_buffer(b"dltensor")  # the capsule keeps this pointer


def bfloat16_capsule(bits: np.ndarray, keep: list) -> object:
    """A DLPack capsule of bfloat16 elements (DLPack code 4) over a uint16 array, as a framework makes one."""
    shape = (ctypes.c_int64 * 1)(bits.size)
    managed = _dlpack.DLManagedTensor()
    managed.dl_tensor.data = bits.ctypes.data
    managed.dl_tensor.device = _dlpack.DLDevice(_dlpack.K_DL_CPU, 0)
    managed.dl_tensor.ndim = 1
    managed.dl_tensor.dtype = _dlpack.DLDataType(4, 16, 1)
    managed.dl_tensor.shape = shape
    keep += [shape, managed, bits]
    return _capsule_new(ctypes.addressof(managed), ctypes.cast(_DLTENSOR_NAME, ctypes.c_char_p), None)


def to_bfloat16_bits(values: np.ndarray) -> np.ndarray:
    return (values.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


def from_bfloat16_bits(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def scenario_dlpack(comm: psdp.Communicator) -> None:
    n, size, rank = 9, comm.size, comm.rank
    data = [rank_data(r, n, np.float32) for r in range(size)]
    out = np.zeros(n, np.float32)
    comm.all_reduce(data[rank].__dlpack__(), out.__dlpack__())
    expect_equal(out, sum(data), "all_reduce of DLPack capsules")

    gathered = np.zeros((size, n), np.int32)  # 2-d, compact
    comm.all_gather(DLPackOnly(rank_data(rank, n, np.int32)), DLPackOnly(gathered))
    expect_equal(gathered.ravel(), np.concatenate([rank_data(r, n, np.int32) for r in range(size)]),
                 "all_gather of __dlpack__ objects")

    capsule = out.__dlpack__()
    comm.all_reduce(data[rank], capsule)
    error = expect_raises(ValueError, comm.all_reduce, data[rank], capsule)
    expect("consumed" in str(error), f"a reused capsule is refused: {error}")

    keep: list = []
    bits = to_bfloat16_bits(rank_data(rank, n, np.float32))
    comm.all_reduce(bfloat16_capsule(bits, keep), bfloat16_capsule(bits, keep))
    expect_equal(from_bfloat16_bits(bits), sum(data), "bfloat16 all_reduce of DLPack capsules")
    comm.barrier()


def scenario_raw_pointers(comm: psdp.Communicator) -> None:
    n, size, rank = 6, comm.size, comm.rank
    data = [rank_data(r, n, np.float32) for r in range(size)]
    send, out = data[rank], np.zeros(n, np.float32)
    comm.all_reduce(psdp.RawBuffer(send.ctypes.data, n, psdp.FLOAT32, owner=send),
                    psdp.RawBuffer(out.ctypes.data, n, psdp.FLOAT32, owner=out))
    expect_equal(out, sum(data), "all_reduce of raw pointers")

    c_array = (ctypes.c_int32 * n)(*rank_data(rank, n, np.int32).tolist())
    raw = psdp.RawBuffer(ctypes.addressof(c_array), n, psdp.INT32)
    comm.all_reduce(raw, raw, psdp.MAX)
    expect_equal(np.array(c_array, np.int32), np.max(data, axis=0).astype(np.int32), "raw in-place MAX")

    bits = to_bfloat16_bits(rank_data(rank, n, np.float32))
    comm.all_reduce(bits, bits, dtype=psdp.BFLOAT16)
    expect_equal(from_bfloat16_bits(bits), sum(data), "bfloat16 through dtype= over uint16")

    halves = rank_data(rank, n, np.float16)
    comm.all_reduce(halves, halves)
    expect_equal(halves, sum(data).astype(np.float16), "float16 all_reduce")

    with comm.premul_sum_op(2.0, psdp.FLOAT32) as twice:
        out = np.zeros(n, np.float32)
        comm.all_reduce(send, out, twice)
        expect_equal(out, 2 * sum(data), "premul-sum by 2.0")
    with comm.premul_sum_op(3, psdp.INT32) as thrice:
        ints = rank_data(rank, n, np.int32)
        comm.all_reduce(ints, ints, thrice)
        expect_equal(ints, 3 * sum(d.astype(np.int32) for d in data), "premul-sum by 3")


# --- errors -----------------------------------------------------------------------------------------------


def scenario_argument_errors(comm: psdp.Communicator) -> None:
    """Errors found before any message: every rank gets them alike, and the communicator is unharmed."""
    n = 8
    f32, i32 = np.zeros(n, np.float32), np.zeros(n, np.int32)
    error = expect_raises(TypeError, comm.all_reduce, f32, i32)
    expect("sendbuf is float32" in str(error) and "recvbuf is int32" in str(error), f"dtype message: {error}")
    error = expect_raises(TypeError, comm.all_reduce, np.zeros(n, np.complex64), np.zeros(n, np.complex64))
    expect("sendbuf" in str(error) and "not one psdp supports" in str(error), f"unsupported dtype: {error}")
    strided = np.zeros(2 * n, np.float32)[::2]
    error = expect_raises(ValueError, comm.all_reduce, strided, f32)
    expect("sendbuf" in str(error) and "not C-contiguous" in str(error), f"non-contiguous: {error}")
    frozen = np.zeros(n, np.float32)
    frozen.setflags(write=False)
    error = expect_raises(ValueError, comm.all_reduce, f32, frozen)
    expect("recvbuf" in str(error) and "read-only" in str(error), f"read-only output: {error}")
    comm.all_reduce(frozen, f32)  # read-only input is fine
    error = expect_raises(ValueError, comm.all_gather, f32, np.zeros(n, np.float32))
    expect("recvbuf holds 8 elements" in str(error), f"local size check: {error}")
    error = expect_raises(ValueError, comm.all_gather_v, f32, f32, [n])
    expect("recvcounts" in str(error), f"recvcounts length: {error}")
    error = expect_raises(TypeError, comm.all_reduce, [1.0] * n, f32)
    expect("sendbuf" in str(error), f"a list is not a buffer: {error}")
    error = expect_raises(TypeError, comm.all_reduce, f32, f32, dtype=psdp.INT64)
    expect("dtype=INT64" in str(error), f"dtype override of another size: {error}")

    # psdp's own argument check: a root outside the communicator, on every rank alike.
    error = expect_raises(psdp.InvalidArgumentError, comm.broadcast, f32, f32, comm.size)
    expect(error.status == psdp.Status.ERR_INVALID_ARGUMENT and "root" in error.message, f"bad root: {error!r}")
    expect(isinstance(error, ValueError), "InvalidArgumentError is a ValueError")

    out = np.zeros(n, np.float32)
    comm.all_reduce(np.ones(n, np.float32), out)
    expect_equal(out, np.full(n, comm.size, np.float32), "the communicator works after argument errors")


def scenario_mismatch(comm: psdp.Communicator) -> None:
    """Ranks that pass different counts all get MismatchError, on a split communicator; the parent goes on."""
    rank, size = comm.rank, comm.size
    team = comm.split(0, rank)
    expect(team.size == size and team.rank == rank, "split with one color keeps every rank in order")
    count = 4 if rank == 0 else 8
    error = expect_raises(psdp.MismatchError, team.all_reduce, np.ones(count, np.float32),
                          np.zeros(count, np.float32))
    expect(error.status == psdp.Status.ERR_MISMATCH and error.message, f"mismatch carries a message: {error!r}")
    expect(isinstance(error, psdp.Error), "MismatchError is a psdp.Error")
    team.close()  # failed: destroyed without finalize
    error = expect_raises(psdp.InvalidUsageError, team.all_reduce, np.ones(4, np.float32), np.zeros(4, np.float32))
    expect(error.status == psdp.Status.ERR_INVALID_USAGE, f"use after destroy: {error!r}")
    expect_raises(psdp.InvalidUsageError, team.barrier)

    out = np.zeros(3, np.int32)
    comm.all_reduce(np.full(3, rank, np.int32), out)
    expect_equal(out, np.full(3, sum(range(size)), np.int32), "the parent works after its team failed")


def scenario_abort(comm: psdp.Communicator) -> None:
    """Rank 0 aborts a team: its own calls raise AbortedError, the others' RemoteError naming it."""
    team = comm.split(0, comm.rank)
    if comm.rank == 0:
        team.abort()
        expect_raises(psdp.AbortedError, team.barrier)
    else:
        error = expect_raises(psdp.RemoteError, team.barrier)
        expect("rank 0" in error.message, f"the remote error names rank 0: {error}")
    team.close()
    comm.barrier()


# --- communicators -----------------------------------------------------------------------------------------


def scenario_split(comm: psdp.Communicator) -> None:
    rank, size = comm.rank, comm.size
    parity = comm.split(rank % 2, key=-rank)  # reversed order inside each team
    members = [r for r in range(size) if r % 2 == rank % 2]
    expect(parity.size == len(members), f"team size {parity.size}")
    expect(parity.rank == len(members) - 1 - members.index(rank), f"team rank {parity.rank} by key")
    out = np.zeros(1, np.int64)
    parity.all_reduce(np.array([rank], np.int64), out)
    expect_equal(out, np.array([sum(members)], np.int64), "all_reduce in a team")
    parity.close()

    alone = comm.split(psdp.SPLIT_NOCOLOR if rank != 0 else 7, 0)
    expect((alone is None) == (rank != 0), "SPLIT_NOCOLOR gives None")
    if alone is not None:
        expect(alone.size == 1, "a team of one")
        alone.close()

    layout = comm.layout(1)
    expect(sorted(layout) == list(range(size)), f"layout {layout} is a permutation")
    shard, replica = comm.split_layout(1)
    expect(shard.size == 1 and replica.size == size, f"split_layout(1): {shard.size}, {replica.size}")
    with shard, replica:
        replica.barrier()


def scenario_unique_id(comm: psdp.Communicator) -> None:
    """A second communicator made from a unique id that rank 0 creates and broadcasts as bytes."""
    raw = np.zeros(128, np.uint8)
    if comm.rank == 0:
        raw[:] = np.frombuffer(bytes(psdp.get_unique_id()), np.uint8)
    comm.broadcast(raw, raw, 0)
    unique_id = psdp.UniqueId.from_bytes(raw.tobytes())
    with psdp.Communicator.from_unique_id(unique_id, comm.rank, comm.size, psdp.Config(timeout_s=60)) as other:
        expect(other.rank == comm.rank and other.size == comm.size, "rank and size of the new communicator")
        out = np.zeros(2, np.uint64)
        other.all_reduce(np.full(2, comm.rank + 1, np.uint64), out)
        expect_equal(out, np.full(2, comm.size * (comm.size + 1) // 2, np.uint64), "all_reduce on it")


SCENARIOS = {name[len("scenario_"):]: f for name, f in globals().items() if name.startswith("scenario_")}


def main() -> int:
    name = sys.argv[1]
    with psdp.Communicator.from_env(psdp.Config(timeout_s=60)) as comm:
        SCENARIOS[name](comm)
        print(f"rank {comm.rank}: {name} ok", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
