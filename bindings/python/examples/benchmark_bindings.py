"""The Python bindings against the C library: bus bandwidth of all-reduce, reduce-scatter and all-gather on
numpy arrays and torch CPU tensors through psdp.Communicator, beside psdp-perf -R 0 on the same sizes, and the
per-call overhead of the Python layer on 8-byte calls.

    python3 bindings/python/examples/benchmark_bindings.py [--psdp-run build/bin/psdp-run]
        [--psdp-perf build/bin/psdp-perf] [--nranks 2] [--rounds 5] [-J results.json]

Runs psdp-perf and this script's worker (--worker, under psdp-run) alternately, --rounds times each, and
prints the medians. Every buffer is made as psdp-perf makes its own (-H 1, its default): a private anonymous
mapping from a 2 MiB boundary, madvised for transparent huge pages and touched once before timing; the numpy
arrays and torch tensors view it (numpy.frombuffer, torch.frombuffer). Overhead: the median time of an 8-byte
all-reduce on a communicator of one rank (no peer to wait for) through the bindings, minus that of the same C
call made directly through ctypes, interleaved.
"""

import argparse
import ctypes
import json
import mmap
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import interleaved_medians_us

COLLECTIVES = {"ar": "all_reduce", "rs": "reduce_scatter", "ag": "all_gather"}
SIZES = [16 << 20, 32 << 20, 64 << 20, 128 << 20, 256 << 20]
ITERS, WARMUP = 20, 5  # psdp-perf's defaults


def bus_factor(collective: str, nranks: int) -> float:
    return 2 * (nranks - 1) / nranks if collective == "ar" else (nranks - 1) / nranks


# --- worker (one rank under psdp-run) --------------------------------------------------------------------


def _timed(comm, call, iters: int) -> float:
    """Seconds per call, the slowest rank's."""
    import numpy as np

    for _ in range(WARMUP):
        call()
    comm.barrier()
    start = time.perf_counter()
    for _ in range(iters):
        call()
    elapsed = np.array([(time.perf_counter() - start) / iters])
    comm.all_reduce(elapsed, elapsed, 3)  # MAX
    return float(elapsed[0])


_HUGE_PAGE = 2 << 20


def _mapping(nbytes: int, value: float) -> tuple[mmap.mmap, int]:
    """(a private anonymous mapping, the offset of its first 2 MiB boundary), madvised for transparent huge
    pages from there and touched: psdp-perf's buffers (-H 1), made the same way."""
    mapping = mmap.mmap(-1, nbytes + _HUGE_PAGE, flags=mmap.MAP_PRIVATE)  # anonymous (fileno -1); not shared
    address = ctypes.addressof(ctypes.c_char.from_buffer(mapping))
    offset = -address % _HUGE_PAGE
    if nbytes:
        mapping.madvise(mmap.MADV_HUGEPAGE, offset, nbytes)
    array = memoryview(mapping)[offset:offset + nbytes].cast("f")
    for i in range(0, len(array), 1024):  # touch every page (numpy-free, so the torch path needs no numpy)
        array[i] = value
    array.release()
    return mapping, offset


def _buffers(kind: str, collective: str, size: int, nranks: int):
    """(sendbuf, recvbuf) of `size` total bytes (nccl-tests' convention) of float32 on psdp-perf's pages."""
    total = size // 4
    send_count = total // nranks if collective == "ag" else total
    recv_count = total // nranks if collective == "rs" else total
    arrays = []
    for count, value in ((send_count, 1.0), (recv_count, 0.0)):
        mapping, offset = _mapping(4 * count, value)
        if kind == "numpy":
            import numpy as np
            arrays.append(np.frombuffer(mapping, np.float32, count, offset))
        else:
            import torch
            arrays.append(torch.frombuffer(mapping, dtype=torch.float32, count=count, offset=offset))
    return arrays


def worker() -> int:
    import numpy as np

    import psdp

    results = []
    with psdp.Communicator.from_env() as comm:
        calls = {"ar": comm.all_reduce, "rs": comm.reduce_scatter, "ag": comm.all_gather}
        for collective, call in calls.items():
            for size in SIZES:
                for kind in ("numpy", "torch"):
                    send, recv = _buffers(kind, collective, size, comm.size)
                    seconds = _timed(comm, lambda: call(send, recv), ITERS)
                    busbw = size / seconds / 1e9 * bus_factor(collective, comm.size)
                    results.append({"collective": collective, "size": size, "kind": kind, "busbw": busbw})
                    del send, recv  # unmapped once their arrays are gone
        results += _overhead(np, psdp)
        if comm.rank == 0:
            print(json.dumps(results))
    return 0


def _overhead(np, psdp) -> list[dict]:
    """Microseconds per 8-byte all-reduce through the bindings and through ctypes alone, interleaved, on a
    communicator of this rank alone: only the layers are timed, not a peer."""
    from psdp._library import lib

    a, b = np.ones(2, np.float32), np.zeros(2, np.float32)
    with psdp.Communicator.from_unique_id(psdp.get_unique_id(), 0, 1) as alone:
        handle, a_ptr, b_ptr = alone._handle_for_call(), a.ctypes.data, b.ctypes.data
        medians = interleaved_medians_us({
            "ctypes": lambda: lib.psdp_all_reduce(a_ptr, b_ptr, 2, psdp.FLOAT32, psdp.SUM, handle, None, None),
            "bindings": lambda: alone.all_reduce(a, b)}, rounds=5)
    return [{"overhead": path, "us": us} for path, us in medians.items()]


# --- driver ----------------------------------------------------------------------------------------------


def _psdp_perf(args, collective: str) -> dict[int, float]:
    with tempfile.NamedTemporaryFile(suffix=".json") as output:
        subprocess.run([args.psdp_run, "-n", str(args.nranks), "--", args.psdp_perf, collective, "-b",
                        str(SIZES[0]), "-e", str(SIZES[-1]), "-n", str(ITERS), "-w", str(WARMUP), "-c", "0",
                        "-R", "0", "-J", output.name], check=True, stdout=subprocess.DEVNULL)
        report = json.load(open(output.name))
    return {r["size"]: r["out_of_place"]["busbw"] for r in report["results"]}


def _worker_run(args) -> list[dict]:
    result = subprocess.run([args.psdp_run, "-n", str(args.nranks), "--", sys.executable, __file__, "--worker"],
                            check=True, capture_output=True, text=True)
    line = next(line for line in result.stdout.splitlines() if "[{" in line)  # rank 0's, prefixed "[0] "
    return json.loads(line[line.index("[{"):])


def driver(args) -> int:
    samples: dict[tuple, list[float]] = {}
    for round_ in range(args.rounds):
        for collective in COLLECTIVES:
            for size, busbw in _psdp_perf(args, collective).items():
                samples.setdefault((collective, size, "psdp-perf"), []).append(busbw)
        for entry in _worker_run(args):
            key = ("overhead", entry["overhead"]) if "overhead" in entry else (
                entry["collective"], entry["size"], entry["kind"])
            samples.setdefault(key, []).append(entry["us"] if "overhead" in entry else entry["busbw"])
        print(f"round {round_ + 1} of {args.rounds} done", file=sys.stderr)
    median = {key: statistics.median(values) for key, values in samples.items()}
    print(f"busbw in GB/s, medians of {args.rounds} interleaved runs, {args.nranks} ranks, float32, out of place, "
          f"transparent huge pages")
    print(f"{'collective':>14} {'size':>9} {'psdp-perf':>10} {'numpy':>8} {'ratio':>6} {'torch':>8} {'ratio':>6}")
    for collective, name in COLLECTIVES.items():
        for size in SIZES:
            base = median[(collective, size, "psdp-perf")]
            numpy_bw, torch_bw = median[(collective, size, "numpy")], median[(collective, size, "torch")]
            print(f"{name:>14} {size >> 20:>6}MiB {base:10.2f} {numpy_bw:8.2f} {numpy_bw / base:6.2f} "
                  f"{torch_bw:8.2f} {torch_bw / base:6.2f}")
    bindings, raw = median[("overhead", "bindings")], median[("overhead", "ctypes")]
    print(f"8-byte all_reduce on a communicator of one rank: {bindings:.2f} us through the bindings, {raw:.2f} us "
          f"through ctypes alone: overhead {bindings - raw:.2f} us per call")
    if args.json:
        Path(args.json).write_text(json.dumps([{"key": list(k), "median": v} for k, v in median.items()], indent=1))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    repository = Path(__file__).resolve().parents[3]
    parser.add_argument("--psdp-run", default=str(repository / "build" / "bin" / "psdp-run"))
    parser.add_argument("--psdp-perf", default=str(repository / "build" / "bin" / "psdp-perf"))
    parser.add_argument("--nranks", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("-J", "--json", help="also write the medians as JSON here")
    args = parser.parse_args()
    return worker() if args.worker else driver(args)


if __name__ == "__main__":
    sys.exit(main())
