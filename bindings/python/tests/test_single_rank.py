"""A communicator of one rank in this process (made from a unique id), and the error classes."""

import gc
import weakref

import numpy as np
import pytest

import psdp
from psdp.errors import ERROR_CLASSES, error_for_status

CONFIG = psdp.Config(timeout_s=30)


@pytest.fixture
def comm():
    with psdp.Communicator.from_unique_id(psdp.get_unique_id(), 0, 1, CONFIG) as communicator:
        yield communicator


def test_rank_size_and_collectives(comm: psdp.Communicator) -> None:
    assert (comm.rank, comm.size) == (0, 1)
    data = np.arange(6, dtype=np.float32)
    out = np.zeros(6, np.float32)
    comm.all_reduce(data, out)
    np.testing.assert_array_equal(out, data)
    comm.all_gather(data, out)
    np.testing.assert_array_equal(out, data)
    comm.broadcast(data, out, 0)
    comm.reduce_scatter_v(data, out, [6], psdp.MAX)
    np.testing.assert_array_equal(out, data)
    comm.barrier()


def test_send_to_self_nonblocking(comm: psdp.Communicator) -> None:
    out = np.zeros(4, np.int64)
    receive = comm.recv(out, 0, blocking=False)
    send = comm.send(np.arange(4, dtype=np.int64), 0, blocking=False)
    assert send.wait(timeout=30) and receive.wait(timeout=30)
    np.testing.assert_array_equal(out, np.arange(4))
    assert receive.test() and receive.done
    with pytest.raises(ValueError, match="timeout"):
        comm.barrier(blocking=False).wait(timeout=-1)
    with pytest.raises(psdp.InvalidArgumentError, match="peer"):
        comm.send(np.arange(4, dtype=np.int64), 0)  # a blocking send to itself


def test_unique_id_round_trips_and_hides_its_secret() -> None:
    unique_id = psdp.get_unique_id()
    assert psdp.UniqueId.from_string(unique_id.to_string()) == unique_id
    assert psdp.UniqueId.from_bytes(bytes(unique_id)) == unique_id
    assert unique_id.to_string() not in repr(unique_id)
    with pytest.raises(psdp.InvalidArgumentError):
        psdp.UniqueId.from_string("not an id")
    with pytest.raises(ValueError, match="128 bytes"):
        psdp.UniqueId.from_bytes(b"short")


def test_calls_after_close_raise_invalid_usage() -> None:
    comm = psdp.Communicator.from_unique_id(psdp.get_unique_id(), 0, 1, CONFIG)
    comm.close()
    comm.close()  # idempotent
    with pytest.raises(psdp.InvalidUsageError, match="destroyed") as raised:
        comm.all_reduce(np.zeros(2, np.float32), np.zeros(2, np.float32))
    assert raised.value.status == psdp.Status.ERR_INVALID_USAGE
    with pytest.raises(psdp.InvalidUsageError):
        comm.split(0)


def test_calls_after_finalize_raise_invalid_usage_from_psdp() -> None:
    comm = psdp.Communicator.from_unique_id(psdp.get_unique_id(), 0, 1, CONFIG)
    comm.finalize()
    with pytest.raises(psdp.InvalidUsageError, match="finalized"):
        comm.barrier()
    comm.destroy()


def test_a_with_block_that_raises_aborts() -> None:
    with pytest.raises(KeyError):
        with psdp.Communicator.from_unique_id(psdp.get_unique_id(), 0, 1, CONFIG) as comm:
            raise KeyError("the caller's own error")
    assert comm.closed


@pytest.mark.parametrize("field,variable", [("port_range", "PSDP_PORT_RANGE"), ("algorithms", "PSDP_ALGORITHMS")])
def test_config_fields_reach_psdp(field: str, variable: str) -> None:
    """A malformed value is refused naming its own variable: the struct's fields line up with psdp.h's."""
    with pytest.raises(psdp.InvalidArgumentError, match=variable):
        psdp.Communicator.from_unique_id(psdp.get_unique_id(), 0, 1, psdp.Config(**{field: "nonsense"}))


def test_premul_sum_op_lifetime(comm: psdp.Communicator) -> None:
    op = comm.premul_sum_op(0.5, psdp.FLOAT64)
    data, out = np.full(3, 4.0), np.zeros(3)
    comm.all_reduce(data, out, op)
    np.testing.assert_array_equal(out, np.full(3, 2.0))
    op.destroy()
    with pytest.raises(ValueError, match="destroyed"):
        comm.all_reduce(data, out, op)
    with pytest.raises(psdp.InvalidArgumentError):  # made for float64, used with float32
        with comm.premul_sum_op(2.0, psdp.FLOAT64) as wrong:
            comm.all_reduce(np.ones(2, np.float32), np.ones(2, np.float32), wrong)


def test_every_status_has_its_class() -> None:
    for status in psdp.Status:
        if status in (psdp.Status.SUCCESS, psdp.Status.IN_PROGRESS):
            continue
        error = error_for_status(status, "the message")
        assert type(error) is ERROR_CLASSES[status]
        assert isinstance(error, psdp.Error)
        assert (error.status, error.message) == (status, "the message")
        assert str(error).endswith(": the message")
    unknown = error_for_status(-99, "new")
    assert type(unknown) is psdp.Error and unknown.status == -99
    assert isinstance(error_for_status(psdp.Status.ERR_TIMEOUT, "t"), TimeoutError)


def test_error_names_match_the_library() -> None:
    from psdp._library import status_string

    for status, cls in ERROR_CLASSES.items():
        assert str(cls("m")) == f"{status_string(status)}: m"


def test_a_dropped_request_keeps_its_buffers_until_it_completes() -> None:
    comm = psdp.Communicator.from_unique_id(psdp.get_unique_id(), 0, 1, CONFIG)
    data = np.ones(1 << 16, np.float32)
    alive = weakref.ref(data)
    comm.all_reduce(data, np.zeros(1 << 16, np.float32), blocking=False)  # the Request is dropped at once
    del data
    gc.collect()
    # Either it was complete when dropped, and freed with its buffers, or the communicator holds both.
    assert (alive() is not None) == (len(comm._operations) == 1)
    comm.close()  # finalize completes it; destroy frees it
    gc.collect()
    assert not comm._operations and alive() is None


def test_host_memory(comm: psdp.Communicator) -> None:
    """psdp_mem_alloc memory: zeroed, usable as numpy arrays in collectives, freed once nothing uses it."""
    memory = psdp.HostMemory(4096)
    assert memory.address % 4096 == 0 and memory.nbytes == 4096
    array = np.frombuffer(memory.buffer(), np.float32)
    assert not array.any()
    array[:] = np.arange(1024)
    out = np.zeros(1024, np.float32)
    comm.all_reduce(array, out)
    np.testing.assert_array_equal(out, np.arange(1024))
    alive = weakref.ref(memory)
    del memory
    gc.collect()
    assert alive() is not None, "the array keeps the memory alive"
    del array
    gc.collect()
    assert alive() is None, "freed once the array is gone"
    with pytest.raises(ValueError, match="nbytes"):
        psdp.HostMemory(0)
