"""One rank of a multi-process test of psdp.jax, started by psdp-run: `python3 jax_worker.py SCENARIO`.

Every collective runs inside jax.jit and is checked against numpy's result from every rank's data (small
integers: exact in every dtype). A rank that passes prints "rank R: SCENARIO ok".
"""

import sys

import jax

jax.config.update("jax_enable_x64", True)  # float64 and int64 arrays as such

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import psdp  # noqa: E402
import psdp.jax as pj  # noqa: E402

from checks import expect, expect_raises  # noqa: E402

DTYPES = (jnp.float32, jnp.int32, jnp.bfloat16, jnp.float64, jnp.int64, jnp.uint8)
REDUCERS = {psdp.SUM: np.sum, psdp.PROD: np.prod, psdp.MIN: np.min, psdp.MAX: np.max}


def expect_equal(got, want: np.ndarray, what: str) -> None:
    got = np.asarray(got)
    if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want):
        raise AssertionError(f"{what}: got {got.tolist()} ({got.dtype}{list(got.shape)}), "
                             f"want {want.tolist()} ({want.dtype}{list(want.shape)})")


def rank_data(rank: int, shape: tuple[int, ...], dtype) -> np.ndarray:
    """Small rank-dependent integers: sums and products over 3 ranks fit every dtype here."""
    return (np.arange(int(np.prod(shape))).reshape(shape) % 3 + rank + 1).astype(dtype)


def scenario_collectives(comm: psdp.Communicator, key: int) -> None:
    size, rank = comm.size, comm.rank
    shape = (2 * size, 3)

    @jax.jit
    def every_collective(x, token):
        reduced = {}
        for op in REDUCERS:
            reduced[op], token = pj.all_reduce(x, token, comm=key, op=op)
        scattered, token = pj.reduce_scatter(x, token, comm=key)
        gathered, token = pj.all_gather(x, token, comm=key)
        return reduced, scattered, gathered, token

    for dtype in DTYPES:
        data = [rank_data(r, shape, dtype) for r in range(size)]
        reduced, scattered, gathered, token = every_collective(jnp.asarray(data[rank]), pj.token())
        for op, reducer in REDUCERS.items():
            expect_equal(reduced[op], reducer(np.stack(data), axis=0).astype(dtype), f"all_reduce {op.name} {dtype}")
        total = np.sum(np.stack(data), axis=0).astype(dtype)
        expect_equal(scattered, total[2 * rank:2 * rank + 2], f"reduce_scatter {dtype}")
        expect_equal(gathered, np.concatenate(data), f"all_gather {dtype}")
        expect_equal(token, np.uint32(len(REDUCERS) + 2), "the token counts the collectives")

    average = jax.jit(lambda x, t: pj.all_reduce(x, t, comm=key, op=psdp.AVG))
    data = [(size * np.arange(4) + size * r).astype(np.float32) for r in range(size)]
    out, _ = average(jnp.asarray(data[rank]), pj.token())
    expect_equal(out, (np.sum(data, axis=0) / size).astype(np.float32), "all_reduce AVG")

    scalar, _ = jax.jit(lambda x, t: pj.all_gather(x, t, comm=key))(jnp.float32(rank), pj.token())
    expect_equal(scalar, np.arange(size, dtype=np.float32), "all_gather of a scalar")
    flags, _ = jax.jit(lambda x, t: pj.all_gather(x, t, comm=key))(jnp.array([rank % 2 == 0, True]), pj.token())
    expect_equal(flags, np.array([r % 2 == 0 or i == 1 for r in range(size) for i in (0, 1)]), "all_gather of bools")


def scenario_ordering(comm: psdp.Communicator, key: int) -> None:
    """Many collectives of one shape on different data in one program and across programs: only the token
    chain keeps XLA from running them in another order on each rank, which would mix their results up."""
    size, rank, arrays = comm.size, comm.rank, 24

    @jax.jit
    def many(xs, token):
        out = []
        for x in xs:
            y, token = pj.all_reduce(x * 2, token, comm=key)
            out.append(y)
        return out, token

    token = pj.token()
    for round_ in range(3):
        xs = [jnp.full(1000, 100 * i + rank + round_, jnp.int32) for i in range(arrays)]
        out, token = many(xs, token)
        for i, y in enumerate(out):
            want = np.full(1000, sum(2 * (100 * i + r + round_) for r in range(size)), np.int32)
            expect_equal(y, want, f"round {round_} array {i}")
    expect_equal(token, np.uint32(3 * arrays), "the token after 3 programs")


def scenario_errors(comm: psdp.Communicator, key: int) -> None:
    error = expect_raises(ValueError, pj.all_reduce, jnp.ones(4), pj.token(), comm=12345)
    expect("12345" in str(error), f"unknown key: {error}")
    error = expect_raises(TypeError, pj.all_reduce, jnp.ones(4, bool), pj.token(), comm=key)
    expect("bool" in str(error), f"bool reduction: {error}")
    error = expect_raises(TypeError, pj.all_reduce, jnp.ones(4), jnp.zeros(2), comm=key)
    expect("token" in str(error), f"bad token: {error}")
    error = expect_raises(ValueError, pj.reduce_scatter, jnp.ones(comm.size + 1), pj.token(), comm=key)
    expect("divid" in str(error), f"reduce_scatter shape: {error}")
    # A compiled program whose key was unregistered fails when run, naming the key.
    other = pj.register(comm)
    compiled = jax.jit(lambda x, t: pj.all_reduce(x, t, comm=other))
    compiled(jnp.ones(3), pj.token())
    pj.unregister(other)
    error = expect_raises(Exception, compiled, jnp.ones(3), pj.token())
    expect(f"key {other}" in str(error), f"unregistered key at run time: {error}")
    # A rank passing another count: every rank's program fails with psdp's mismatch message.
    mismatched = jax.jit(lambda x, t: pj.all_reduce(x, t, comm=key))
    error = expect_raises(Exception, mismatched, jnp.ones(5 if comm.rank == 0 else 6), pj.token())
    expect("mismatch" in str(error).lower(), f"count mismatch: {error}")
    comm.destroy()  # failed now (psdp.jax's calls do not go through the bindings, which would note it)


SCENARIOS = {name[len("scenario_"):]: f for name, f in globals().items() if name.startswith("scenario_")}


def main() -> int:
    name = sys.argv[1]
    with psdp.Communicator.from_env(psdp.Config(timeout_s=60)) as comm:
        SCENARIOS[name](comm, pj.register(comm))
        print(f"rank {comm.rank}: {name} ok", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
