"""One rank of a multi-process test of the psdp torch backend, started by psdp-run:
`python3 torch_worker.py SCENARIO STORE_FILE`.

The job's default group runs on psdp ("cpu:psdp"); every collective is checked against torch's own result:
the same call on a gloo group of the same ranks, or the result computed locally from every rank's data.
Data are small integers, so every sum, product and average is exact and results must be equal bit for bit.
A rank that passes prints "rank R: SCENARIO ok".
"""

import datetime
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel

import psdp
import psdp.torch
from psdp.torch import PsdpBackend

from checks import expect, expect_raises

# psdp-run sets these; the defaults only let the test module import this one for the scenario names.
RANK, SIZE = int(os.environ.get("PSDP_RANK", 0)), int(os.environ.get("PSDP_WORLD_SIZE", 1))
DTYPES = (torch.float32, torch.int64, torch.bfloat16, torch.float64)


def expect_equal(got: torch.Tensor, want: torch.Tensor, what: str) -> None:
    if got.dtype != want.dtype or not torch.equal(got, want):
        raise AssertionError(f"{what}: got {got.tolist()} ({got.dtype}), want {want.tolist()} ({want.dtype})")


def rank_data(rank: int, n: int, dtype: torch.dtype) -> torch.Tensor:
    """Small rank-dependent integers: sums, products and averages over 3 ranks stay exact."""
    return (torch.arange(n) % 5 + rank + 1).to(dtype)


def same_on_both(name: str, call, make_inputs, gloo: dist.ProcessGroup, compare: bool = True) -> None:
    """Runs call(inputs, group) on psdp (the default group) and on gloo with equal inputs; the outputs
    (whatever make_inputs returned, after the call) must be equal where `compare` (where torch defines them)."""
    ours, theirs = make_inputs(), make_inputs()
    call(ours, None)
    call(theirs, gloo)
    if not compare:
        return
    for i, (a, b) in enumerate(zip(_flatten(ours), _flatten(theirs), strict=True)):
        expect_equal(a, b, f"{name} tensor {i}")


def _flatten(value) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    return [t for item in value for t in _flatten(item)]


# --- every collective against gloo -----------------------------------------------------------------------


def check_against_gloo(gloo: dist.ProcessGroup, dtype: torch.dtype) -> None:
    n = 7
    mine = rank_data(RANK, n, dtype)
    ops = [dist.ReduceOp.SUM, dist.ReduceOp.MIN, dist.ReduceOp.MAX]
    if dtype != torch.bfloat16:  # gloo has no bfloat16 product
        ops.append(dist.ReduceOp.PRODUCT)
    for op in ops:
        same_on_both(f"all_reduce {op} {dtype}", lambda t, g, op=op: dist.all_reduce(t[0], op, group=g),
                     lambda: [mine.clone()], gloo)
        same_on_both(f"reduce {op} {dtype}", lambda t, g, op=op: dist.reduce(t[0], SIZE - 1, op, group=g),
                     lambda: [mine.clone()], gloo, compare=RANK == SIZE - 1)
    same_on_both(f"reduce_scatter_tensor {dtype}",
                 lambda t, g: dist.reduce_scatter_tensor(t[0], t[1], group=g),
                 lambda: [torch.zeros(3, dtype=dtype), rank_data(RANK, 3 * SIZE, dtype)], gloo)
    same_on_both(f"reduce_scatter list {dtype}", lambda t, g: dist.reduce_scatter(t[0], t[1], group=g),
                 lambda: [torch.zeros(3, dtype=dtype), [rank_data(RANK + b, 3, dtype) for b in range(SIZE)]], gloo)
    same_on_both(f"all_gather_into_tensor {dtype}",
                 lambda t, g: dist.all_gather_into_tensor(t[0], t[1], group=g),
                 lambda: [torch.zeros(n * SIZE, dtype=dtype), mine.clone()], gloo)
    same_on_both(f"all_gather list {dtype}", lambda t, g: dist.all_gather(t[0], t[1], group=g),
                 lambda: [[torch.zeros(n, dtype=dtype) for _ in range(SIZE)], mine.clone()], gloo)
    same_on_both(f"broadcast {dtype}", lambda t, g: dist.broadcast(t[0], SIZE - 1, group=g),
                 lambda: [mine.clone()], gloo)
    same_on_both(f"gather {dtype}",
                 lambda t, g: dist.gather(t[0], t[1] if RANK == 1 else None, dst=1, group=g),
                 lambda: [mine.clone(), [torch.zeros(n, dtype=dtype) for _ in range(SIZE)]], gloo)
    same_on_both(f"scatter {dtype}",
                 lambda t, g: dist.scatter(t[0], t[1] if RANK == 0 else None, src=0, group=g),
                 lambda: [torch.zeros(n, dtype=dtype), [rank_data(10 * b, n, dtype) for b in range(SIZE)]], gloo)
    same_on_both(f"all_to_all_single {dtype}", lambda t, g: dist.all_to_all_single(t[0], t[1], group=g),
                 lambda: [torch.zeros(2 * SIZE, dtype=dtype), rank_data(RANK, 2 * SIZE, dtype)], gloo)
    in_splits = [b + RANK + 1 for b in range(SIZE)]  # rank r sends b + r + 1 rows to rank b
    out_splits = [RANK + b + 1 for b in range(SIZE)]
    same_on_both(f"all_to_all_single uneven {dtype}",
                 lambda t, g: dist.all_to_all_single(t[0], t[1], out_splits, in_splits, group=g),
                 lambda: [torch.zeros(sum(out_splits), 2, dtype=dtype),
                          rank_data(RANK, 2 * sum(in_splits), dtype).reshape(-1, 2)], gloo)
    same_on_both(f"all_to_all list {dtype}", lambda t, g: dist.all_to_all(t[0], t[1], group=g),
                 lambda: [[torch.zeros(2, dtype=dtype) for b in range(SIZE)],
                          [rank_data(RANK, 2, dtype) + b for b in range(SIZE)]], gloo)


def scenario_collectives(gloo: dist.ProcessGroup) -> None:
    for dtype in DTYPES:
        check_against_gloo(gloo, dtype)
    # Data movement takes any dtype, as bytes where psdp has no such dtype (gloo lacks some of these).
    for dtype in (torch.bool, torch.int16, torch.complex64):
        data = [(torch.arange(6) % 2 + r).to(dtype) for r in range(SIZE)]
        t = data[RANK].clone()
        dist.broadcast(t, SIZE - 1)
        expect_equal(t, data[SIZE - 1], f"broadcast {dtype}")
        out = torch.zeros(6 * SIZE, dtype=dtype)
        dist.all_gather_into_tensor(out, data[RANK])
        expect_equal(out, torch.cat(data), f"all_gather_into_tensor {dtype}")
    # Complex sums reduce their parts.
    same_on_both("all_reduce complex64", lambda t, g: dist.all_reduce(t[0], group=g),
                 lambda: [torch.complex(rank_data(RANK, 5, torch.float32), -rank_data(RANK, 5, torch.float32))],
                 gloo)
    check_ops_gloo_lacks()
    check_psdp_memory()
    check_object_collectives()
    check_uneven_lists()
    check_point_to_point()
    dist.barrier()


def check_psdp_memory() -> None:
    """Tensors on psdp_mem_alloc memory, which the direct collectives read in place."""
    tensor = psdp.torch.empty(3, 1 << 15)
    expect(tensor.shape == (3, 1 << 15) and not tensor.any(), "psdp.torch.empty: shape, zeroed")
    tensor.copy_(rank_data(RANK, 3 << 15, torch.float32).view(3, -1))
    dist.all_reduce(tensor)
    expect_equal(tensor.view(-1), sum(rank_data(r, 3 << 15, torch.float32) for r in range(SIZE)),
                 "all_reduce on psdp memory")
    gathered = psdp.torch.empty(SIZE * 5, dtype=torch.int64)
    dist.all_gather_into_tensor(gathered, torch.full((5,), RANK, dtype=torch.int64))
    expect_equal(gathered, torch.arange(SIZE).repeat_interleave(5), "all_gather_into_tensor into psdp memory")
    expect(psdp.torch.empty(0).numel() == 0, "psdp.torch.empty of no elements")


def check_ops_gloo_lacks() -> None:
    """AVG and PREMUL_SUM, against the result computed from every rank's data."""
    n = 6
    data = [(SIZE * (torch.arange(n) + r)).to(torch.float32) for r in range(SIZE)]
    t = data[RANK].clone()
    dist.all_reduce(t, dist.ReduceOp.AVG)
    expect_equal(t, torch.stack(data).sum(0) / SIZE, "all_reduce AVG")
    factor = 0.5
    t = data[RANK].clone()
    dist.all_reduce(t, dist._make_nccl_premul_sum(factor))
    expect_equal(t, torch.stack(data).sum(0) * factor, "all_reduce PREMUL_SUM")
    t = data[RANK].clone()
    dist.all_reduce(t, dist._make_nccl_premul_sum(torch.tensor([4.0])))
    expect_equal(t, torch.stack(data).sum(0) * 4, "all_reduce PREMUL_SUM with a tensor factor")
    out = torch.zeros(2, dtype=torch.float64)
    send = torch.arange(2 * SIZE, dtype=torch.float64) * SIZE + RANK * SIZE
    dist.reduce_scatter_tensor(out, send, dist.ReduceOp.AVG)
    want = sum(torch.arange(2 * SIZE, dtype=torch.float64) * SIZE + r * SIZE for r in range(SIZE)) / SIZE
    expect_equal(out, want[2 * RANK:2 * RANK + 2], "reduce_scatter_tensor AVG")


def check_object_collectives() -> None:
    objects = [None] * SIZE
    dist.all_gather_object(objects, {"rank": RANK, "text": "x" * RANK})
    expect(objects == [{"rank": r, "text": "x" * r} for r in range(SIZE)], f"all_gather_object: {objects}")
    sent = [("from", 0), [1, 2, 3]]
    received = sent if RANK == 0 else [None, None]
    dist.broadcast_object_list(received, src=0)
    expect(received == sent, f"broadcast_object_list: {received}")
    gathered = [None] * SIZE if RANK == 0 else None
    dist.gather_object(f"rank {RANK}", gathered, dst=0)
    expect(RANK != 0 or gathered == [f"rank {r}" for r in range(SIZE)], f"gather_object: {gathered}")
    out = [None]
    dist.scatter_object_list(out, [{"to": r} for r in range(SIZE)] if RANK == 0 else None, src=0)
    expect(out == [{"to": RANK}], f"scatter_object_list: {out}")


def check_uneven_lists() -> None:
    """all_gather and reduce_scatter with lists whose tensors differ in size per rank."""
    outputs = [torch.zeros(r + 1, dtype=torch.int32) for r in range(SIZE)]
    dist.all_gather(outputs, torch.full((RANK + 1,), RANK + 10, dtype=torch.int32))
    for r, t in enumerate(outputs):
        expect_equal(t, torch.full((r + 1,), r + 10, dtype=torch.int32), f"uneven all_gather block {r}")
    inputs = [torch.full((b + 1,), 100 * b + RANK, dtype=torch.int32) for b in range(SIZE)]
    out = torch.zeros(RANK + 1, dtype=torch.int32)
    dist.reduce_scatter(out, inputs)
    expect_equal(out, torch.full((RANK + 1,), SIZE * 100 * RANK + sum(range(SIZE)), dtype=torch.int32),
                 "uneven reduce_scatter")


def check_point_to_point() -> None:
    right, left = (RANK + 1) % SIZE, (RANK - 1) % SIZE
    out = torch.zeros(4, dtype=torch.int64)
    sends = [dist.isend(torch.full((4,), RANK, dtype=torch.int64) + i, right) for i in range(3)]
    for i in range(3):
        dist.recv(out, left)
        expect_equal(out, torch.full((4,), left, dtype=torch.int64) + i, f"message {i} from rank {left}")
    for work in sends:
        work.wait()
    ops = [dist.P2POp(dist.isend, torch.full((2,), float(RANK)), right),
           dist.P2POp(dist.irecv, out2 := torch.zeros(2), left)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    expect_equal(out2, torch.full((2,), float(left)), "batch_isend_irecv")
    got = [None]
    if RANK == 0:
        dist.send_object_list([{"hello": 1}], dst=1)
    elif RANK == 1:
        dist.recv_object_list(got, src=0)
        expect(got == [{"hello": 1}], f"recv_object_list: {got}")


# --- asynchronous calls and futures ----------------------------------------------------------------------


def scenario_async(gloo: dist.ProcessGroup) -> None:
    tensors = [rank_data(RANK, 1000 + i, torch.float32) for i in range(40)]
    works = [dist.all_reduce(t, async_op=True) for t in tensors]
    futures = [w.get_future() for w in works[::2]]
    for i, work in reversed(list(enumerate(works))):  # waited newest first
        work.wait()
    for i, future in enumerate(futures):
        expect_equal(future.wait()[0], sum(rank_data(r, 1000 + 2 * i, torch.float32) for r in range(SIZE)),
                     f"future {i}")
    for i, t in enumerate(tensors):
        expect_equal(t, sum(rank_data(r, 1000 + i, torch.float32) for r in range(SIZE)), f"async all_reduce {i}")
    # A chain of futures, as DDP's communication hooks build them.
    t = rank_data(RANK, 16, torch.float32)
    chained = dist.all_reduce(t, async_op=True).get_future().then(lambda f: f.value()[0] * 2)
    expect_equal(chained.wait(), 2 * sum(rank_data(r, 16, torch.float32) for r in range(SIZE)), "then()")
    work = dist.all_reduce(torch.ones(1), async_op=True)
    work.wait(datetime.timedelta(seconds=30))
    expect(work.get_future().done(), "the future is done after wait")
    future = dist.all_reduce(torch.ones(1), async_op=True).get_future()
    future.wait()
    expect(future.done(), "the future is done after its wait")


# --- DDP training equals single-process training ---------------------------------------------------------


def make_model() -> nn.Module:
    """A small MLP with small-integer weights, in float64: on integer inputs every value of two steps of SGD
    with a power-of-two learning rate is exact (a third would need more than 53 bits), so psdp's sums must
    give exactly the single-process result."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).double()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randint(-2, 3, p.shape).double())
    return model


def batch(step: int, rows: int, first_row: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(step)
    x = torch.randint(-3, 4, (SIZE * 4, 4), generator=g).double()
    y = torch.randint(-3, 4, (SIZE * 4, 2), generator=g).double()
    return x[first_row:first_row + rows], y[first_row:first_row + rows]


def train(model: nn.Module, steps: int, rows: int, first_row: int) -> list[torch.Tensor]:
    optimizer = torch.optim.SGD(model.parameters(), lr=2.0**-10)
    for step in range(steps):
        x, y = batch(step, rows, first_row)
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y, reduction="sum").backward()
        optimizer.step()
    return [p.detach().clone() for p in model.parameters()]


def scenario_ddp(gloo: dist.ProcessGroup) -> None:
    steps = 2
    reference = train(make_model(), steps, SIZE * 4, 0)
    # DDP averages the gradients; the per-rank losses are summed over 4 rows, so scaling by SIZE gives the
    # gradient of the sum over all SIZE * 4 rows, which the single process computes.
    ddp = DistributedDataParallel(make_model(), bucket_cap_mb=0.0001)  # several buckets
    ddp.register_comm_hook(None, _sum_hook)
    trained = train(ddp, steps, 4, 4 * RANK)
    for i, (got, want) in enumerate(zip(trained, reference, strict=True)):
        expect_equal(got, want, f"parameter {i} after {steps} DDP steps")


def _sum_hook(state, bucket) -> torch.futures.Future[torch.Tensor]:
    """DDP's default hook divides by the world size; summing instead keeps the data integers."""
    return dist.all_reduce(bucket.buffer(), async_op=True).get_future().then(lambda f: f.value()[0])


def scenario_fsdp(gloo: dist.ProcessGroup) -> None:
    """FSDP2 (fully_shard) over psdp trains as a single process does, within float64 rounding: its sharded
    all-gathers and reduce-scatters, and the full_tensor() gathers of the result, run on the backend."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    steps, rows = 3, 4
    mesh = init_device_mesh("cpu", (SIZE,))
    sharded = make_model()
    for layer in sharded:
        if isinstance(layer, nn.Linear):
            fully_shard(layer, mesh=mesh)
    fully_shard(sharded, mesh=mesh)
    trained = train_mean(sharded, steps, rows, rows * RANK)
    reference = train_mean(make_model(), steps, SIZE * rows, 0)
    for i, (got, want) in enumerate(zip(trained, reference, strict=True)):
        full = got.full_tensor()
        expect(torch.allclose(full, want, rtol=1e-12, atol=1e-12),
               f"parameter {i} after {steps} FSDP steps: largest difference {(full - want).abs().max().item()}")


def train_mean(model: nn.Module, steps: int, rows: int, first_row: int) -> list[torch.Tensor]:
    """SGD on the mean squared error (what FSDP's averaging gradient reduction matches)."""
    optimizer = torch.optim.SGD(model.parameters(), lr=2.0**-6)
    for step in range(steps):
        x, y = batch(step, rows, first_row)
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    return [p.detach() for p in model.parameters()]


# --- groups ----------------------------------------------------------------------------------------------


def scenario_subgroups(gloo: dist.ProcessGroup) -> None:
    pair = dist.new_group([0, 1], backend="psdp")
    if RANK < 2:
        t = torch.full((5,), float(RANK + 1))
        dist.all_reduce(t, group=pair)
        expect_equal(t, torch.full((5,), 3.0), "all_reduce on ranks 0 and 1")
        expect(dist.get_backend(pair) == "psdp", f"backend of the pair: {dist.get_backend(pair)}")
    t = torch.full((5,), 1.0)
    dist.all_reduce(t)
    expect_equal(t, torch.full((5,), float(SIZE)), "all_reduce on the world after the pair")


# --- bad input -------------------------------------------------------------------------------------------


def scenario_bad_input(gloo: dist.ProcessGroup) -> None:
    # torch runs meta tensors itself: ask the backend directly, as it would be for a CUDA tensor.
    backend = dist.distributed_c10d._get_default_group()._get_backend(torch.device("cpu"))
    expect(isinstance(backend, PsdpBackend), f"backend object: {type(backend)}")
    error = expect_raises(ValueError, backend.allreduce, [torch.empty(4, device="meta")], dist.AllreduceOptions())
    expect("CPU tensors" in str(error), f"meta device: {error}")
    strided = torch.zeros(4, 4).t()
    error = expect_raises(ValueError, dist.all_reduce, strided)
    expect("not contiguous" in str(error), f"non-contiguous: {error}")
    error = expect_raises(TypeError, dist.all_reduce, torch.zeros(4, dtype=torch.int16))
    expect("int16" in str(error), f"int16 reduction: {error}")
    error = expect_raises(psdp.UnsupportedError, dist.all_reduce, torch.zeros(4, dtype=torch.int32),
                          dist.ReduceOp.BAND)
    expect("BAND" in str(error), f"bitwise op: {error}")
    error = expect_raises(ValueError, dist.all_gather_into_tensor, torch.zeros(5), torch.zeros(2))
    expect("recvbuf" in str(error), f"all_gather_into_tensor sizes: {error}")
    error = expect_raises(TypeError, dist.all_gather_into_tensor, torch.zeros(2 * SIZE), torch.zeros(2).long())
    expect("one dtype" in str(error), f"dtypes: {error}")
    error = expect_raises(psdp.UnsupportedError, dist.send, torch.zeros(1), (RANK + 1) % SIZE, tag=7)
    expect("tag" in str(error), f"tag: {error}")
    # Coalesced lists, contiguous or not, reduce as one.
    block = rank_data(RANK, 9, torch.float32)
    apart = [rank_data(RANK, 3, torch.float32), rank_data(RANK + 1, 5, torch.float32)]
    dist.all_reduce_coalesced([block[:4], block[4:]])
    dist.all_reduce_coalesced(apart)
    expect_equal(block, sum(rank_data(r, 9, torch.float32) for r in range(SIZE)), "coalesced, contiguous")
    expect_equal(apart[1], sum(rank_data(r + 1, 5, torch.float32) for r in range(SIZE)), "coalesced, apart")
    # A rank passing another number of tensors, or another count, than the others: every rank gets the
    # mismatch, naming the counts (and the communicator is failed afterwards: this comes last).
    error = expect_raises(psdp.MismatchError, dist.all_reduce_coalesced,
                          [torch.zeros(4) for _ in range(2 if RANK == 0 else 3)])
    expect("count" in str(error), f"tensor-count mismatch: {error}")


def scenario_closed_backend(gloo: dist.ProcessGroup) -> None:
    """A backend used after shutdown raises InvalidUsageError; made without a job, init fails cleanly."""
    store = dist.FileStore(sys.argv[2] + ".closed", SIZE)
    backend = PsdpBackend.from_store(store, RANK, SIZE, datetime.timedelta(seconds=60))
    backend.shutdown()
    opts = dist.AllreduceOptions()
    error = expect_raises(psdp.InvalidUsageError, backend.allreduce, [torch.zeros(2)], opts)
    expect("destroyed" in str(error), f"after shutdown: {error}")


def scenario_peer_death(gloo: dist.ProcessGroup) -> None:
    """The last rank leaves without a word after a collective; every other rank's next collective fails with
    psdp's remote error naming it, well within the group's 60 s timeout, instead of hanging."""
    dist.all_reduce(torch.ones(4))
    victim = SIZE - 1
    if RANK == victim:
        print(f"rank {RANK}: peer_death ok", flush=True)
        os._exit(0)
    start = time.monotonic()
    error = expect_raises(psdp.RemoteError, dist.all_reduce, torch.ones(1 << 16))
    elapsed = time.monotonic() - start
    expect(f"rank {victim}" in str(error) or f"peer {victim}" in str(error), f"the error names no victim: {error}")
    expect(elapsed < 30, f"the failure took {elapsed:.1f} s to surface")
    print(f"rank {RANK}: peer_death ok", flush=True)
    os._exit(0)  # the default group is failed: nothing left to tear down cleanly


SCENARIOS = {name[len("scenario_"):]: f for name, f in globals().items() if name.startswith("scenario_")}


def main() -> int:
    name, store_file = sys.argv[1], sys.argv[2]
    dist.init_process_group("cpu:psdp", init_method=f"file://{store_file}", rank=RANK, world_size=SIZE,
                            timeout=datetime.timedelta(seconds=60))
    expect(dist.get_backend() == "cpu:psdp", f"backend: {dist.get_backend()}")
    gloo = dist.new_group(backend="gloo")
    SCENARIOS[name](gloo)
    dist.destroy_process_group()
    print(f"rank {RANK}: {name} ok", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
