#!/usr/bin/env python3
"""Side-by-side bandwidth of psdp-perf, UCC, Open MPI, PyTorch's gloo and ucx_perftest
(ucp_put_bw) on one machine.

A benchmark, not a test (CI runs it only briefly, with psdp alone: tests/perf/compare_run_test.sh).
perf/README.md documents it. Python standard library only (matplotlib for --plot).

Every repetition runs each peer once, in turn, so that noise from other work on the machine spreads over all
of them alike; the median of the repetitions is reported. Open MPI is run under several documented
shared-memory tunings and the best median per size is kept, so that psdp is compared with a tuned MPI.

psdp-perf runs up to three times per collective, each with its own table: on private buffers (-R 0), which
psdp's direct algorithm reads with CMA; on buffers from psdp_mem_alloc (-R 1), which it maps and reads in
place; and on private buffers with PSDP_ALGORITHM=ring, the pipelined ring through staging.
Every system runs on the same pages: --pages small (default) measures on the small pages a framework's
allocator hands over unless told otherwise (psdp-perf -H 0, the peers' own malloc); --pages huge asks for
transparent huge pages everywhere (psdp-perf -H 1; glibc's malloc in every peer through GLIBC_TUNABLES
below). Under the system's THP mode "always" both get huge pages; the table names the mode. UCC runs where
perf/compare/build_ucc.sh (or --ucc-prefix) gives an installed UCC, through ucc_coll_bench.c (timed as
psdp-perf and mpi_coll_bench time theirs: calls back to back; ucc_perftest leaves a barrier between its
calls outside the clock), under its default selection and the documented TL/UCP algorithm variants below,
best per size kept; PyTorch's gloo backend where a python with torch is at hand (the bindings' environment).
At 2 ranks cma_bound.c measures the kernel's cross-memory copy alone, the bound on every collective over
private buffers. psdp's ratios are against that bound and against the best collective peer per size.
--load spinners|both measures under two busy shell loops (contention). --plot draws busbw against size.
"""
import argparse
import contextlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# psdp-perf's and mpi_coll_bench's names; all-to-all and send/recv have no in-place form.
KNOWN_COLLS = ("ar", "rs", "ag", "reduce", "gather", "scatter", "a2a", "sendrecv")
NO_IN_PLACE = ("a2a", "sendrecv")


def places_of(coll):
    """(place, column suffix) pairs measured for `coll`: out of place, and in place where it has one."""
    return ((0, ""),) if coll in NO_IN_PLACE else ((0, ""), (1, " ip"))
# glibc >= 2.35: malloc advises transparent huge pages for what it maps.
THP_ENV = "GLIBC_TUNABLES=glibc.malloc.hugetlb=1"

# Open MPI 4.1 shared-memory variants (ompi_info --all lists these parameters). coll_tuned algorithm ids:
# allreduce 4 ring, 6 rabenseifner; allgather 4 ring, 6 two-proc; reduce_scatter_block 3 recursive halving,
# 4 butterfly.
MPI_BASE = ["--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,vader"]
MPI_CONFIGS = {
    "default": [],
    "cma": ["--mca", "btl_vader_single_copy_mechanism", "cma"],
    "nocopy": ["--mca", "btl_vader_single_copy_mechanism", "none"],
    "ring": ["--mca", "coll_tuned_use_dynamic_rules", "1", "--mca", "coll_tuned_allreduce_algorithm", "4",
             "--mca", "coll_tuned_allgather_algorithm", "4", "--mca", "coll_tuned_reduce_scatter_block_algorithm",
             "3"],
    "rabenseifner": ["--mca", "coll_tuned_use_dynamic_rules", "1", "--mca", "coll_tuned_allreduce_algorithm", "6",
                     "--mca", "coll_tuned_allgather_algorithm", "6", "--mca",
                     "coll_tuned_reduce_scatter_block_algorithm", "4"],
}

# UCC variants: its own selection (TL/UCP: all-reduce sra_knomial from 4 KiB, all-gather ring, reduce-scatter
# ring, its only algorithm in UCC 1.3), and knomial forced for every size of all-reduce and all-gather
# (UCC_TL_UCP_TUNE, '#'-separated coll:score:@algorithm tokens; UCC's docs/user_guide.md).
UCC_CONFIGS = {
    "default": None,
    "knomial": "allreduce:inf:@knomial#allgather:inf:@knomial",
}
UCC_COLL = {"ar": "allreduce", "rs": "reduce_scatter", "ag": "allgather"}
DEFAULT_UCC_PREFIX = os.path.expanduser("~/.cache/psdp/ucc")


def ucc_variant_runs(config, coll):
    """Whether UCC variant `config` is measured on `coll`: its own selection always, a tuned one only on the
    collectives its UCC_TL_UCP_TUNE names (on the others it is the same run again, and the better of two
    samples of one setting would count as a better variant)."""
    tune = UCC_CONFIGS[config]
    return tune is None or UCC_COLL[coll] in (token.split(":")[0] for token in tune.split("#"))


def thp_mode():
    """The system's transparent huge page mode, the bracketed word of its sysfs file, or "unknown"."""
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            m = re.search(r"\[(\w+)\]", f.read())
        return m.group(1) if m else "unknown"
    except OSError:
        return "unknown"


def parse_size(text):
    m = re.fullmatch(r"(\d+)([KMG]?)", text.upper())
    if not m:
        raise argparse.ArgumentTypeError(f"bad size {text!r}")
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)]


def human(size):
    for shift, unit in ((30, "G"), (20, "M"), (10, "K")):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift}{unit}"
    return str(size)


def run(cmd, timeout, env=None, quiet=False):
    """Runs cmd; returns stdout, or None (with the reason on stderr unless quiet) when it fails."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        print(f"  timeout after {timeout}s: {' '.join(cmd)}", file=sys.stderr)
        return None
    if p.returncode != 0:
        if not quiet:
            print(f"  exit {p.returncode}: {' '.join(cmd)}\n{(p.stderr or p.stdout)[-2000:]}", file=sys.stderr)
        return None
    return p.stdout


PSDP_MODES = {
    "private": ("private buffers (-R 0): direct, the peer read with CMA", "0", None),
    "shared": ("psdp_mem_alloc buffers (-R 1): direct, the peer's buffers mapped", "1", None),
    "ring": ("private buffers (-R 0): PSDP_ALGORITHM=ring", "0", "ring"),
}


def psdp_once(args, coll, tmp, mode):
    """(out-of-place, in-place) busbw (GB/s) per size of one psdp-perf run in `mode` (PSDP_MODES)."""
    _, shared, algorithm = PSDP_MODES[mode]
    out = os.path.join(tmp, f"psdp_{coll}.json")
    cmd = [args.psdp_run, "-n", str(args.np), "--timeout", str(args.timeout), "--", args.psdp_perf, coll, "-b",
           str(args.min), "-e", str(args.max), "-f", "2", "-n", str(args.iters), "-w", str(args.warmup), "-c", "0",
           "-R", shared, "-H", "1" if args.pages == "huge" else "0", "-J", out]
    env = dict(os.environ, PSDP_ALGORITHM=algorithm) if algorithm else None
    if run(cmd, args.timeout + 30, env=env) is None:
        return {}
    with open(out) as f:
        return {r["size"]: (r["out_of_place"]["busbw"], r["in_place"]["busbw"]) for r in json.load(f)["results"]}


def gloo_once(args, coll, tmp, port):
    """busbw (GB/s) per size of one run of PyTorch's gloo backend (gloo_coll_bench.py) on `coll`."""
    out = os.path.join(tmp, f"gloo_{coll}.json")
    bench = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gloo_coll_bench.py")
    cmd = [args.psdp_run, "-n", str(args.np), "--timeout", str(args.timeout), "--", args.gloo_python, bench, coll,
           "--min", str(args.min), "--max", str(args.max), "--iters", str(args.iters), "--warmup",
           str(args.warmup), "--port", str(port), "--json", out]
    if run(cmd, args.timeout + 30, env=peer_env(args)) is None:
        return {}
    with open(out) as f:
        return {r["size"]: r["busbw"] for r in json.load(f)["results"]}


# gloo's place per collective: torch's all_reduce works in place, its reduce_scatter_tensor and
# all_gather_into_tensor out of place.
GLOO_PLACE = {"ar": 1, "rs": 0, "ag": 0}


def default_gloo_python():
    """The bindings' environment (scripts/python_tests.sh makes it) where its python imports torch, else None."""
    python = os.path.expanduser("~/.cache/psdp/venv/bin/python")
    if os.access(python, os.X_OK) and run([python, "-c", "import torch.distributed"], 120, quiet=True) is not None:
        return python
    return None


UCX_VARIANTS = ("", "sm,self")  # UCX_TLS for ucp_put_bw: UCX's default choice, and shared memory only


def ucx_iters(size):
    # About 2 GiB moved per size, so that small sizes are not all noise and 256M stays under a second or two.
    return max(20, min(2000, (2 << 30) // size))


def peer_env(args):
    """The environment of a peer's processes: with --pages huge, glibc's malloc asks for huge pages."""
    env = dict(os.environ)
    if args.pages == "huge":
        key, value = THP_ENV.split("=", 1)
        env[key] = value
    return env


def ucx_once(args, size, tls, port):
    """ucp_put_bw overall bandwidth in GB/s (1e9, as psdp-perf) for one size, server and client on localhost."""
    env = peer_env(args)
    if tls:
        env["UCX_TLS"] = tls
    n = ucx_iters(size)
    common = ["-t", "ucp_put_bw", "-s", str(size), "-n", str(n), "-w", str(max(2, n // 10)), "-p", str(port)]
    server = subprocess.Popen([args.ucx_perftest] + common, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env=env)
    try:
        out = None
        # The server needs a moment to listen; the client retries its connect, quietly until the last try.
        for attempt in range(20):
            out = run([args.ucx_perftest, "localhost"] + common, 120, env, quiet=attempt < 19)
            if out is not None:
                break
            subprocess.run(["sleep", "0.2"])
    finally:
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    if not out:
        return None
    for line in out.splitlines():
        if line.startswith("Final:"):
            # Final: iters p50 avg overall | MB/s avg, overall | msg/s avg, overall. UCX's MB is 2^20 bytes.
            return float(line.split()[6]) * (1 << 20) / 1e9
    return None


def mpi_thp(args):
    """mpirun's arguments that pass --pages huge's malloc setting to the ranks."""
    return ["-x", THP_ENV] if args.pages == "huge" else []


def mpirun_rows(args, extra, program, ncols, size_of, busbw_column):
    """busbw (GB/s) per size from the table an MPI-launched benchmark prints: `program` under mpirun (MPI_BASE,
    the pages' setting, then `extra`), its rows of `ncols` fields that start with a count or size (`size_of`
    turns that into psdp-perf's size)."""
    out = run([args.mpirun] + MPI_BASE + mpi_thp(args) + extra + ["-np", str(args.np)] + program, args.timeout)
    result = {}
    for line in (out or "").splitlines():
        fields = line.split()
        if len(fields) == ncols and fields[0].isdigit():
            result[size_of(int(fields[0]))] = float(fields[busbw_column])
    return result


def mpi_once(args, binary, coll, config, in_place):
    """busbw (GB/s) per size of one mpi_coll_bench run, out of place or in place (MPI_IN_PLACE): rows of size,
    time, algbw, busbw."""
    program = [binary, coll, str(args.min), str(args.max), str(args.iters), str(args.warmup)]
    return mpirun_rows(args, MPI_CONFIGS[config], program + (["in-place"] if in_place else []), 4, lambda s: s, 3)


def cma_once(args):
    """busbw (GB/s) per size of one cma_bound run (in-place all-gather's data movement, each of 2 processes
    reading the other's half with process_vm_readv): rows of size, time, algbw, busbw. Its buffers come from
    glibc's aligned_alloc, so --pages huge (peer_env) reaches them as it reaches the peers'."""
    out = run([args.cma_bound, str(args.min), str(args.max), str(args.iters), str(args.warmup)], args.timeout,
              peer_env(args))
    result = {}
    for line in (out or "").splitlines():
        fields = line.split()
        if len(fields) == 4 and fields[0].isdigit():
            result[int(fields[0])] = float(fields[3])
    return result


def ucc_once(args, coll, config, in_place):
    """busbw (GB/s) per size of one ucc_coll_bench run, float32 sum on host memory: rows of size, time, algbw,
    busbw, as mpi_coll_bench's."""
    tune = ["-x", "UCC_TL_UCP_TUNE=" + UCC_CONFIGS[config]] if UCC_CONFIGS[config] else []
    program = [args.ucc_bench, coll, str(args.min), str(args.max), str(args.iters), str(args.warmup)]
    return mpirun_rows(args, tune, program + (["in-place"] if in_place else []), 4, lambda s: s, 3)


def ucc_version(args):
    """UCC's version line from the prefix's ucc_info -v, or "version unknown"."""
    out = run([os.path.join(args.ucc_prefix, "bin", "ucc_info"), "-v"], 60, quiet=True)
    return out.splitlines()[0].strip().lstrip("# ") if out else "version unknown"


def nominal(size, sizes):
    """The size of `sizes` that a reported size stands for: at rank counts that do not divide a size, the
    benchmarks round the vector down to a whole number of elements per rank (16M at 3 ranks runs 16M - 4)."""
    best = min(sizes, key=lambda s: abs(s - size))
    return best if abs(best - size) * 100 < best else None


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(v, digits=2):
    return "n/a" if v is None else f"{v:.{digits}f}"


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def load_pyplot():
    """matplotlib's pyplot on the file backend, or exit naming the package."""
    try:
        import matplotlib
    except ImportError:
        sys.exit("run_compare: --plot needs matplotlib (Debian: apt-get install python3-matplotlib; run this "
                 "script with /usr/bin/python3 where another python3 comes first)")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def draw_busbw(path, sizes, colls, lines_of, title):
    """A PNG of busbw against size: a row per collective, out of place and in place side by side, a line per
    system; lines_of[(coll, place)] maps a system's name to its busbw per size (None: not measured)."""
    plt = load_pyplot()
    names = {"ar": "all-reduce", "rs": "reduce-scatter", "ag": "all-gather"}
    fig, axes = plt.subplots(len(colls), 2, figsize=(12, 3.6 * len(colls)), squeeze=False)
    # One colour per system in every panel, though some panels lack a system (gloo runs one place per collective).
    systems = list(dict.fromkeys(name for panel in lines_of.values() for name in panel))
    colour = {name: f"C{i % 10}" for i, name in enumerate(systems)}
    for row, c in enumerate(colls):
        for place, label in ((0, "out of place"), (1, "in place")):
            ax = axes[row][place]
            if (c, place) not in lines_of:
                ax.set_axis_off()
                continue
            for name, values in lines_of[(c, place)].items():
                points = [(s, v) for s, v in zip(sizes, values) if v is not None]
                if points:
                    ax.plot([s for s, _ in points], [v for _, v in points], marker="o", markersize=3,
                            linestyle="--" if "bound" in name else "-", color=colour[name], label=name)
            ax.set_xscale("log", base=2)
            ax.set_xticks(sizes, [human(s) for s in sizes], fontsize=7)
            ax.set_ylabel("busbw (GB/s)")
            ax.set_ylim(bottom=0)
            ax.set_title(f"{names.get(c, c)}, {label}", fontsize=10)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


SPINNERS = 2
LOAD_TITLES = {"quiet": "quiet machine", "spinners": f"under contention: {SPINNERS} spinning shell loops"}
PAGES = {"small": "small pages (no huge-page advice)", "huge": "transparent huge pages asked for"}
_port = [13400]


def next_port():
    """A fresh TCP port for the next rendezvous (ucx_perftest, gloo), cycling through 13400-13999."""
    _port[0] = _port[0] + 1 if _port[0] < 13999 else 13400
    return _port[0]


@contextlib.contextmanager
def spinners(count):
    """`count` busy shell loops (while :; do :; done) running for the duration of the block, then killed and
    reaped. psdp and its peers keep their own priority and scheduling policy."""
    procs = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(count)]
    try:
        yield
    finally:
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.wait()


class Samples:
    """Every repetition's busbw per system, variant, collective, place and size, for one load."""

    def __init__(self, args):
        sizes = args.sizes
        self.psdp = {(m, c, place): {s: [] for s in sizes} for m in args.modes for c in args.colls
                     for place in (0, 1)}
        self.ucx = {v: {s: [] for s in sizes} for v in UCX_VARIANTS}
        self.cma = {s: [] for s in sizes}
        self.mpi = {(cfg, c, place): {s: [] for s in sizes} for cfg in args.configs for c in args.colls
                    for place in (0, 1)}
        self.gloo = {c: {s: [] for s in sizes} for c in args.gloo_colls}
        self.ucc = {(cfg, c, place): {s: [] for s in sizes} for cfg in args.ucc_list for c in args.ucc_colls
                    for place in (0, 1) if ucc_variant_runs(cfg, c)}


def add(table, size, sizes, value):
    """Appends `value` to the samples of the nominal size that `size` stands for, if it is one of `sizes`."""
    size = nominal(size, sizes)
    if size in table:
        table[size].append(value)


def runs_of(args):
    """The (smallest size, largest size, timed iterations) of the runs one repetition makes of each system. Every
    size gets --iters, or with --bytes-per-size B at least B / size: the sizes that need more run one by one,
    the others together."""
    runs, together = [], []
    for size in args.sizes:
        iters = max(args.iters, -(-args.bytes_per_size // size))
        if iters > args.iters:
            runs.append((size, size, iters))
        else:
            together.append(size)
    if together:
        runs.append((together[0], together[-1], args.iters))
    return runs


def iterations_text(args):
    """How many timed iterations each size had, for the tables' header."""
    return ", ".join(f"{human(lo)}{'' if lo == hi else '-' + human(hi)} {n}" for lo, hi, n in runs_of(args))


def measure_round(args, samples, tmp):
    """One repetition: every system and variant once, in turn (per run of runs_of), then ucp_put_bw."""
    for lo, hi, iters in runs_of(args):
        run_args = argparse.Namespace(**vars(args))
        run_args.min, run_args.max, run_args.iters = lo, hi, iters
        measure_sizes(run_args, samples, tmp)
    if not args.no_ucx:
        for v in UCX_VARIANTS:
            for size in args.sizes:
                samples.ucx[v][size].append(ucx_once(args, size, v, next_port()))


def measure_sizes(args, samples, tmp):
    """Every collective system and variant once, in turn, over the sizes args.min to args.max."""
    sizes = args.sizes
    for m in args.modes:
        for c in args.colls:
            for size, both in psdp_once(args, c, tmp, m).items():
                for place in (0, 1):
                    add(samples.psdp[(m, c, place)], size, sizes, both[place])
    if args.cma_bound:
        for size, bw in cma_once(args).items():
            add(samples.cma, size, sizes, bw)
    for c in args.gloo_colls:
        for size, bw in gloo_once(args, c, tmp, next_port()).items():
            add(samples.gloo[c], size, sizes, bw)
    for cfg in args.configs:
        for c in args.colls:
            for place, _ in places_of(c):
                for size, bw in mpi_once(args, args.mpi_bench, c, cfg, place).items():
                    add(samples.mpi[(cfg, c, place)], size, sizes, bw)
    for cfg in args.ucc_list:
        for c in (c for c in args.ucc_colls if ucc_variant_runs(cfg, c)):
            for place, _ in places_of(c):
                for size, bw in ucc_once(args, c, cfg, place).items():
                    add(samples.ucc[(cfg, c, place)], size, sizes, bw)


def best_of(samples, variants, key_of, size):
    """(the best median busbw, its variant) over `variants` at `size`, or (None, "-")."""
    cands = [(median(samples[key_of(v)][size]), v) for v in variants if key_of(v) in samples]
    cands = [x for x in cands if x[0] is not None]
    return max(cands) if cands else (None, "-")


class Summary:
    """Medians of one load's samples: psdp's per mode, each peer's best variant, the best collective peer."""

    def __init__(self, args, samples):
        self.ompi, self.ompi_winner, self.ucc, self.ucc_winner, self.put, self.put_winner = {}, {}, {}, {}, {}, {}
        for s in args.sizes:
            for c in args.colls:
                for place, _ in places_of(c):
                    key = (c, place, s)
                    self.ompi[key], self.ompi_winner[key] = best_of(samples.mpi, args.configs,
                                                                    lambda cfg: (cfg, c, place), s)
                    self.ucc[key], self.ucc_winner[key] = best_of(samples.ucc, args.ucc_list,
                                                                  lambda cfg: (cfg, c, place), s)
            self.put[s], self.put_winner[s] = best_of(samples.ucx, UCX_VARIANTS, lambda v: v, s)
        self.cma = {s: median(samples.cma[s]) for s in args.sizes}
        # gloo's medians, in the one place it has per collective; then the best collective peer per column.
        self.gloo = {(c, place, s): median(samples.gloo[c][s]) if c in samples.gloo and place == GLOO_PLACE[c]
                     else None for c in args.colls for place in (0, 1) for s in args.sizes}
        self.peer, self.peer_name = {}, {}
        for key in self.gloo:
            cands = [x for x in ((self.ompi.get(key), "ompi"), (self.ucc.get(key), "ucc"), (self.gloo[key], "gloo"))
                     if x[0] is not None]
            self.peer[key], self.peer_name[key] = max(cands) if cands else (None, "-")
        self.psdp = {key: {s: median(v[s]) for s in args.sizes} for key, v in samples.psdp.items()}


def report_lines(args, sm):
    """The markdown tables of one load's summary: the peers, then psdp per mode with its ratios."""
    sizes, colls = args.sizes, args.colls
    lines = ["", f"busbw in GB/s (1e9 B/s), float32 sum, {args.np} ranks, median of {args.reps}, timed iterations "
             f"per size {iterations_text(args)}, every system on "
             f"{PAGES[args.pages]}, system THP mode {thp_mode()}; \"ip\": in place (nccl-tests' in-place columns; "
             "MPI_IN_PLACE for Open MPI, UCC_COLL_ARGS_FLAG_IN_PLACE for UCC); put_bw: ucx_perftest one-sided put bandwidth, the better of "
             "UCX_TLS default and sm,self; cma: perf/compare/cma_bound, 2 processes each reading the other's half "
             "with process_vm_readv, the bound on every collective over private buffers; ompi: the best Open MPI variant per size and column; ucc: the best UCC "
             "variant; gloo: PyTorch's gloo backend (all-reduce in place, the others out of place, as torch runs "
             "them); peer: the best of ompi, ucc and gloo per size and column.", ""]
    gloo_cols = [(c, GLOO_PLACE[c], label) for c in args.gloo_colls for place, label in places_of(c)
                 if place == GLOO_PLACE[c]]
    ucc_cols = [(c, place, label) for c in args.ucc_colls for place, label in places_of(c)]
    ompi_cols = [(c, place, label) for c in colls for place, label in places_of(c)] if args.configs else []
    header = ("| size | put_bw | cma" + "".join(f" | ompi {c}{label}" for c, _, label in ompi_cols) +
              "".join(f" | ucc {c}{label}" for c, _, label in ucc_cols) +
              "".join(f" | gloo {c}{label}" for c, _, label in gloo_cols) + " |")
    lines += ["Peers:", "", header, "|" + "---|" * (header.count("|") - 1)]
    for s in sizes:
        lines.append(f"| {human(s)} | {fmt(sm.put[s])} | {fmt(sm.cma[s])}" +
                     "".join(f" | {fmt(sm.ompi[(c, place, s)])}" for c, place, _ in ompi_cols) +
                     "".join(f" | {fmt(sm.ucc[(c, place, s)])}" for c, place, _ in ucc_cols) +
                     "".join(f" | {fmt(sm.gloo[(c, place, s)])}" for c, place, _ in gloo_cols) + " |")
    big, mid = 256 << 20, 16 << 20
    # Each collective is set against a bound: the kernel's cross-memory copy where it was measured (every
    # collective of 2 ranks over private buffers; beyond it, mapped buffers), else all-gather and reduce-scatter
    # against one-sided put bandwidth. And every collective against the best collective peer.
    if any(v is not None for v in sm.cma.values()):
        bound, bound_name = sm.cma, "cma"
        bound_ratios = [(c, place, label) for c in colls for place, label in places_of(c)]
    else:
        bound, bound_name = sm.put, "put"
        bound_ratios = [(c, place, label) for c in ("ag", "rs") if c in colls for place, label in places_of(c)]
    peer_ratios = [(c, place, label) for c in colls for place, label in places_of(c)]
    for m in args.modes:
        med = sm.psdp
        header = ("| size | " + " | ".join(f"{c}{label}" for c in colls for _, label in places_of(c)) + " | " +
                  " | ".join(f"{c}{label}/{bound_name}" for c, _, label in bound_ratios) +
                  (" | " if bound_ratios else "") +
                  " | ".join(f"{c}{label}/peer" for c, _, label in peer_ratios) + " |")
        rows = [header, "|" + "---|" * (header.count("|") - 1)]
        for s in sizes:
            bw = {(c, place): med[(m, c, place)][s] for c in colls for place in (0, 1)}
            cells = [fmt(bw[(c, place)]) for c in colls for place, _ in places_of(c)]
            cells += [fmt(ratio(bw[(c, place)], bound[s])) for c, place, _ in bound_ratios]
            cells += [fmt(ratio(bw[(c, place)], sm.peer[(c, place, s)])) for c, place, _ in peer_ratios]
            rows.append(f"| {human(s)} | " + " | ".join(cells) + " |")
        lines += ["", f"psdp on {PSDP_MODES[m][0]}:", ""] + rows + [""]
        parts = [f"{c}{label} {fmt(ratio(med[(m, c, place)].get(big), med[(m, c, place)].get(mid)))}"
                 for c in colls for place, label in places_of(c)]
        lines.append(f"psdp ({m}) busbw 256M/16M: " + ", ".join(parts))
    columns = "/".join(f"{c}{label}" for c in colls for _, label in places_of(c))
    if not args.no_ucx:
        lines.append("best put_bw variant per size: " + "; ".join(
            f"{human(s)} {sm.put_winner[s] or 'default'}" for s in sizes if sm.put_winner[s] != "-"))
    lines.append("best peer per size: " + "; ".join(
        f"{human(s)} " + "/".join(sm.peer_name[(c, place, s)] for c in colls for place, _ in places_of(c))
        for s in sizes) + f" ({columns})")
    if args.configs:
        lines.append("best Open MPI variant per size: " + "; ".join(
            f"{human(s)} " + "/".join(sm.ompi_winner[(c, place, s)] for c in colls for place, _ in places_of(c))
            for s in sizes) + f" ({columns})")
        lines.append("Open MPI base: mpirun " + " ".join(MPI_BASE + mpi_thp(args)) + " -np " + str(args.np))
    if args.ucc_list:
        lines.append("best UCC variant per size: " + "; ".join(
            f"{human(s)} " + "/".join(sm.ucc_winner[(c, place, s)] for c, place, _ in ucc_cols) for s in sizes) +
            " (" + "/".join(f"{c}{label}" for c, _, label in ucc_cols) + "); " + ucc_version(args))
    return lines


def contention_lines(args, quiet, loaded):
    """psdp's busbw under the spinners as a fraction of its quiet busbw, and against the best loaded peer."""
    cols = [(c, place, label) for c in args.colls for place, label in places_of(c)]
    lines = []
    for m in args.modes:
        header = ("| size | " + " | ".join(f"{c}{label} loaded/quiet" for c, _, label in cols) + " | " +
                  " | ".join(f"{c}{label} loaded/peer" for c, _, label in cols) + " |")
        rows = [header, "|" + "---|" * (header.count("|") - 1)]
        for s in args.sizes:
            cells = [fmt(ratio(loaded.psdp[(m, c, place)][s], quiet.psdp[(m, c, place)][s])) for c, place, _ in cols]
            cells += [fmt(ratio(loaded.psdp[(m, c, place)][s], loaded.peer[(c, place, s)])) for c, place, _ in cols]
            rows.append(f"| {human(s)} | " + " | ".join(cells) + " |")
        lines += ["", f"## psdp ({m}) under contention: loaded/quiet, and loaded against the best loaded peer", ""]
        lines += rows
    return lines


def plot_panels(args, sm):
    """draw_busbw's lines: per (collective, place), a line per psdp mode and per peer's best variant."""
    panels = {}
    ucc_cols = {(c, place) for c in args.ucc_colls for place, _ in places_of(c)}
    for c in args.colls:
        for place, _ in places_of(c):
            panel = {f"psdp {m}: {PSDP_MODES[m][0].split(' (')[0]}": [sm.psdp[(m, c, place)][s] for s in args.sizes]
                     for m in args.modes}
            if args.configs:
                panel["Open MPI, best variant per size"] = [sm.ompi[(c, place, s)] for s in args.sizes]
            if (c, place) in ucc_cols:
                panel["UCC, best variant per size"] = [sm.ucc[(c, place, s)] for s in args.sizes]
            if c in args.gloo_colls and place == GLOO_PLACE[c]:
                panel["PyTorch gloo"] = [sm.gloo[(c, place, s)] for s in args.sizes]
            if not args.no_ucx:
                panel["ucp_put_bw (one-sided put, a bound)"] = [sm.put[s] for s in args.sizes]
            if args.cma_bound:
                panel["process_vm_readv (the bound on private buffers)"] = [sm.cma[s] for s in args.sizes]
            panels[(c, place)] = panel
    return panels


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(REPO, "build"), help="psdp build directory (default: build)")
    p.add_argument("--np", type=int, default=2, help="ranks (default 2)")
    p.add_argument("--min", type=parse_size, default=1 << 20, help="smallest size (default 1M)")
    p.add_argument("--max", type=parse_size, default=256 << 20, help="largest size (default 256M)")
    p.add_argument("--reps", type=int, default=3, help="repetitions; the median is reported (default 3)")
    p.add_argument("--iters", type=int, default=10, help="timed iterations per size (default 10)")
    p.add_argument("--warmup", type=int, default=3, help="warm-up iterations per size (default 3)")
    p.add_argument("--bytes-per-size", type=parse_size, default=0,
                   help="at least this many bytes per size: a size S runs max(--iters, B / S) timed iterations "
                        "(those above --iters in a run of its own). Under --load, so that the small sizes' "
                        "timed loops span many of the scheduler's time slices (perf/README.md)")
    p.add_argument("--mpi-configs", default=",".join(MPI_CONFIGS), help="Open MPI variants to try")
    p.add_argument("--psdp-buffers", default="private,shared,ring",
                   help="psdp-perf runs: private (-R 0), shared (-R 1, psdp_mem_alloc), ring (-R 0 with "
                        "PSDP_ALGORITHM=ring); default all three")
    p.add_argument("--no-ucx", action="store_true", help="skip ucx_perftest")
    p.add_argument("--no-mpi", action="store_true", help="skip Open MPI")
    p.add_argument("--no-cma", action="store_true", help="skip the kernel-copy bound (perf/compare/cma_bound.c)")
    p.add_argument("--gloo-python",
                   help="a python that imports torch, to measure PyTorch's gloo backend (default: the bindings' "
                        "environment, ~/.cache/psdp/venv, where it has torch; else gloo is left out, saying so)")
    p.add_argument("--no-gloo", action="store_true", help="skip PyTorch's gloo backend")
    p.add_argument("--ucc-prefix", default=DEFAULT_UCC_PREFIX,
                   help="where UCC is installed (default: " + DEFAULT_UCC_PREFIX.replace(os.path.expanduser("~"), "~") +
                        ", where perf/compare/build_ucc.sh installs it; without include/ucc/api/ucc.h there UCC "
                        "is left out, saying so)")
    p.add_argument("--ucc-configs", default=",".join(UCC_CONFIGS), help="UCC variants to try")
    p.add_argument("--no-ucc", action="store_true", help="skip UCC")
    p.add_argument("--pages", choices=("small", "huge"), default="small",
                   help="the pages every system's buffers are on: small (default: no advice, what a framework's "
                        "allocator hands over) or huge (transparent huge pages asked for: psdp-perf -H 1, "
                        "GLIBC_TUNABLES for the peers)")
    p.add_argument("--load", choices=("quiet", "spinners", "both"), default="quiet",
                   help="quiet (default); spinners: every system measured while two busy shell loops "
                        "(while :; do :; done) compete for the cores, as a framework's threads do; both: each "
                        "repetition quiet, then under the spinners, with a table of psdp's loaded/quiet ratios")
    p.add_argument("--timeout", type=int, default=600, help="seconds per run (default 600)")
    p.add_argument("--output", help="also write the markdown table to this file")
    p.add_argument("--plot", help="also draw busbw against size as this PNG: a panel per collective and place, "
                                  "a line per system (needs matplotlib: Debian's python3-matplotlib)")
    p.add_argument("--colls", default="ar,rs,ag",
                   help="collectives, psdp-perf's names: " + ",".join(KNOWN_COLLS) + " (default ar,rs,ag)")
    args = p.parse_args()
    if args.plot:
        load_pyplot()  # fail now, not after the measurements
    colls = tuple(c for c in args.colls.split(",") if c)
    if not colls or any(c not in KNOWN_COLLS for c in colls):
        sys.exit(f"run_compare: --colls {args.colls!r}: expected a list of {', '.join(KNOWN_COLLS)}")
    args.psdp_run = os.path.join(args.build, "bin", "psdp-run")
    args.psdp_perf = os.path.join(args.build, "bin", "psdp-perf")
    for tool in (args.psdp_run, args.psdp_perf):
        if not os.access(tool, os.X_OK):
            sys.exit(f"run_compare: {tool} not found; build the psdp-perf and psdp-run targets in {args.build}")
    args.ucx_perftest = shutil.which("ucx_perftest")
    if not args.no_ucx and not args.ucx_perftest:
        sys.exit("run_compare: ucx_perftest not found (Debian: ucx-utils), or pass --no-ucx")
    args.mpirun, mpicc = shutil.which("mpirun"), shutil.which("mpicc")
    if not args.no_mpi and not (args.mpirun and mpicc):
        sys.exit("run_compare: mpirun/mpicc not found (Debian: apt-get install openmpi-bin libopenmpi-dev), "
                 "or pass --no-mpi")
    with_ucc = not args.no_ucc
    if with_ucc and not os.path.isfile(os.path.join(args.ucc_prefix, "include", "ucc", "api", "ucc.h")):
        print(f"run_compare: UCC left out: none installed in {args.ucc_prefix} (build one with "
              "perf/compare/build_ucc.sh SOURCE_DIR, or pass --ucc-prefix)", file=sys.stderr)
        with_ucc = False
    elif with_ucc and not (args.mpirun and mpicc):
        print("run_compare: UCC left out: its benchmark needs mpirun and mpicc (Debian: openmpi-bin "
              "libopenmpi-dev)", file=sys.stderr)
        with_ucc = False
    args.ucc_list = [c for c in args.ucc_configs.split(",") if c] if with_ucc else []
    for c in args.ucc_list:
        if c not in UCC_CONFIGS:
            sys.exit(f"run_compare: unknown UCC config {c!r} (known: {', '.join(UCC_CONFIGS)})")
    args.ucc_colls = [c for c in colls if c in UCC_COLL] if args.ucc_list else []
    if not args.no_gloo and not args.gloo_python:
        args.gloo_python = default_gloo_python()
        if not args.gloo_python:
            print("run_compare: gloo left out: no python with torch (make ~/.cache/psdp/venv with "
                  "scripts/python_tests.sh, or pass --gloo-python)", file=sys.stderr)
    args.gloo_colls = [c for c in colls if c in GLOO_PLACE] if args.gloo_python and not args.no_gloo else []
    args.modes = [m for m in args.psdp_buffers.split(",") if m]
    if not args.modes or any(m not in PSDP_MODES for m in args.modes):
        sys.exit(f"run_compare: --psdp-buffers {args.psdp_buffers!r}: expected a list of {', '.join(PSDP_MODES)}")
    args.configs = [c for c in args.mpi_configs.split(",") if c] if not args.no_mpi else []
    for c in args.configs:
        if c not in MPI_CONFIGS:
            sys.exit(f"run_compare: unknown Open MPI config {c!r} (known: {', '.join(MPI_CONFIGS)})")
    args.colls = colls
    args.sizes = []
    s = args.min
    while s <= args.max:
        args.sizes.append(s)
        s *= 2
    loads = {"quiet": ["quiet"], "spinners": ["spinners"], "both": ["quiet", "spinners"]}[args.load]
    samples = {load: Samples(args) for load in loads}
    with tempfile.TemporaryDirectory(prefix="psdp-compare-") as tmp:
        args.mpi_bench = os.path.join(tmp, "mpi_coll_bench")
        args.cma_bound = None
        if args.no_cma:
            pass
        elif args.np != 2:
            print(f"run_compare: cma bound left out: it is measured at 2 ranks, not {args.np}", file=sys.stderr)
        elif not shutil.which("cc"):
            print("run_compare: cma bound left out: no C compiler (cc)", file=sys.stderr)
        else:
            args.cma_bound = os.path.join(tmp, "cma_bound")
            src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cma_bound.c")
            if run(["cc", "-O2", "-Wall", "-Wextra", "-o", args.cma_bound, src], 120) is None:
                sys.exit("run_compare: cc failed on cma_bound.c")
        if not args.no_mpi:
            src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mpi_coll_bench.c")
            if run([mpicc, "-O2", "-Wall", "-Wextra", "-o", args.mpi_bench, src], 120) is None:
                sys.exit("run_compare: mpicc failed")
        if args.ucc_list:
            args.ucc_bench = os.path.join(tmp, "ucc_coll_bench")
            src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ucc_coll_bench.c")
            lib = os.path.join(args.ucc_prefix, "lib")
            if run([mpicc, "-O2", "-Wall", "-Wextra", "-I", os.path.join(args.ucc_prefix, "include"), "-o",
                    args.ucc_bench, src, "-L", lib, "-Wl,-rpath," + lib, "-lucc"], 120) is None:
                sys.exit(f"run_compare: mpicc failed on ucc_coll_bench.c against {args.ucc_prefix}")
        for rep in range(args.reps):
            for load in loads:
                print(f"repetition {rep + 1}/{args.reps}" + (f", {load}" if len(loads) > 1 else ""), file=sys.stderr)
                with spinners(SPINNERS if load == "spinners" else 0):
                    measure_round(args, samples[load], tmp)
    summaries = {load: Summary(args, samples[load]) for load in loads}
    lines = []
    for load in loads:
        if len(loads) > 1 or load != "quiet":
            lines += ["", f"## {LOAD_TITLES[load]}"]
        lines += report_lines(args, summaries[load])
    if len(loads) > 1:
        lines += contention_lines(args, summaries["quiet"], summaries["spinners"])
    text = "\n".join(lines) + "\n"
    print(text)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    if args.plot:
        draw_busbw(args.plot, args.sizes, colls, plot_panels(args, summaries[loads[-1]]),
                   f"busbw against size, float32 sum, {args.np} ranks, median of {args.reps}, "
                   f"{PAGES[args.pages]} (THP mode {thp_mode()}), {LOAD_TITLES[loads[-1]]}")
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()

