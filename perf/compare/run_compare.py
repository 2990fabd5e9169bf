#!/usr/bin/env python3
"""Side-by-side bandwidth of psdp-perf, ucx_perftest (ucp_put_bw), Open MPI and PyTorch's gloo on one machine.

A benchmark, not a test: it is not part of CI. perf/README.md documents it. Python standard library only.

Every repetition runs each peer once, in turn, so that noise from other work on the machine spreads over all
of them alike; the median of the repetitions is reported. Open MPI is run under several documented
shared-memory tunings and the best median per size is kept, so that psdp is compared with a tuned MPI.

psdp-perf runs up to three times per collective, each with its own table: on private buffers (-R 0), which
psdp's direct algorithm reads with CMA; on buffers from psdp_mem_alloc (-R 1), which it maps and reads in
place; and on private buffers with PSDP_ALGORITHM=ring, the pipelined ring through staging.
psdp-perf's private buffers ask for transparent huge pages (its default, -H 1). So that no peer is measured on worse
memory, ucx_perftest and Open MPI also run with glibc's malloc asking for them (GLIBC_TUNABLES below), and
the best of the variants is what psdp is compared with. PyTorch's gloo backend runs where a python with torch
is at hand (the bindings' environment), and psdp's ratios are against the better collective peer per size.
--plot draws busbw against size (matplotlib).
"""
import argparse
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
# The same variants with huge pages for the benchmark's malloc'd buffers.
MPI_CONFIGS.update({name + "+thp": ["-x", THP_ENV] + argv for name, argv in list(MPI_CONFIGS.items())})


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
           "-R", shared, "-J", out]
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
    if run(cmd, args.timeout + 30) is None:
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


def ucx_iters(size):
    # About 2 GiB moved per size, so that small sizes are not all noise and 256M stays under a second or two.
    return max(20, min(2000, (2 << 30) // size))


def ucx_once(args, size, variant, port):
    """ucp_put_bw overall bandwidth in GB/s (1e9, as psdp-perf) for one size, server and client on localhost."""
    tls, thp = variant
    env = dict(os.environ)
    if tls:
        env["UCX_TLS"] = tls
    if thp:
        key, value = THP_ENV.split("=", 1)
        env[key] = value
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


def mpi_once(args, binary, coll, config, in_place):
    """busbw (GB/s) per size of one mpi_coll_bench run, out of place or in place (MPI_IN_PLACE)."""
    cmd = [args.mpirun] + MPI_BASE + MPI_CONFIGS[config] + ["-np", str(args.np), binary, coll, str(args.min),
                                                            str(args.max), str(args.iters), str(args.warmup)]
    if in_place:
        cmd.append("in-place")
    out = run(cmd, args.timeout)
    if out is None:
        return {}
    result = {}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) == 4 and fields[0].isdigit():
            result[int(fields[0])] = float(fields[3])
    return result


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
                            linestyle="--" if "put_bw" in name else "-", label=name)
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


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(REPO, "build"), help="psdp build directory (default: build)")
    p.add_argument("--np", type=int, default=2, help="ranks (default 2)")
    p.add_argument("--min", type=parse_size, default=1 << 20, help="smallest size (default 1M)")
    p.add_argument("--max", type=parse_size, default=256 << 20, help="largest size (default 256M)")
    p.add_argument("--reps", type=int, default=3, help="repetitions; the median is reported (default 3)")
    p.add_argument("--iters", type=int, default=10, help="timed iterations per size (default 10)")
    p.add_argument("--warmup", type=int, default=3, help="warm-up iterations per size (default 3)")
    p.add_argument("--mpi-configs", default=",".join(MPI_CONFIGS), help="Open MPI variants to try")
    p.add_argument("--psdp-buffers", default="private,shared,ring",
                   help="psdp-perf runs: private (-R 0), shared (-R 1, psdp_mem_alloc), ring (-R 0 with "
                        "PSDP_ALGORITHM=ring); default all three")
    p.add_argument("--no-ucx", action="store_true", help="skip ucx_perftest")
    p.add_argument("--no-mpi", action="store_true", help="skip Open MPI")
    p.add_argument("--gloo-python",
                   help="a python that imports torch, to measure PyTorch's gloo backend (default: the bindings' "
                        "environment, ~/.cache/psdp/venv, where it has torch; else gloo is left out, saying so)")
    p.add_argument("--no-gloo", action="store_true", help="skip PyTorch's gloo backend")
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
    if not args.no_gloo and not args.gloo_python:
        args.gloo_python = default_gloo_python()
        if not args.gloo_python:
            print("run_compare: gloo left out: no python with torch (make ~/.cache/psdp/venv with "
                  "scripts/python_tests.sh, or pass --gloo-python)", file=sys.stderr)
    gloo_colls = [c for c in colls if c in GLOO_PLACE] if args.gloo_python and not args.no_gloo else []
    modes = [m for m in args.psdp_buffers.split(",") if m]
    if not modes or any(m not in PSDP_MODES for m in modes):
        sys.exit(f"run_compare: --psdp-buffers {args.psdp_buffers!r}: expected a list of {', '.join(PSDP_MODES)}")
    configs = [c for c in args.mpi_configs.split(",") if c]
    for c in configs:
        if c not in MPI_CONFIGS:
            sys.exit(f"run_compare: unknown Open MPI config {c!r} (known: {', '.join(MPI_CONFIGS)})")

    sizes = []
    s = args.min
    while s <= args.max:
        sizes.append(s)
        s *= 2
    ucx_variants = [("", False), ("sm,self", False), ("", True), ("sm,self", True)]
    psdp = {(m, c, place): {s: [] for s in sizes} for m in modes for c in colls for place in (0, 1)}
    ucx = {v: {s: [] for s in sizes} for v in ucx_variants}
    mpi = {(cfg, c, place): {s: [] for s in sizes} for cfg in configs for c in colls for place in (0, 1)}
    gloo = {c: {s: [] for s in sizes} for c in gloo_colls}
    with tempfile.TemporaryDirectory(prefix="psdp-compare-") as tmp:
        binary = os.path.join(tmp, "mpi_coll_bench")
        if not args.no_mpi:
            src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mpi_coll_bench.c")
            if run([mpicc, "-O2", "-Wall", "-Wextra", "-o", binary, src], 120) is None:
                sys.exit("run_compare: mpicc failed")
        port = 13400
        for rep in range(args.reps):
            print(f"repetition {rep + 1}/{args.reps}", file=sys.stderr)
            for m in modes:
                for c in colls:
                    for size, both in psdp_once(args, c, tmp, m).items():
                        size = nominal(size, sizes)
                        for place in (0, 1):
                            if size in psdp[(m, c, place)]:
                                psdp[(m, c, place)][size].append(both[place])
            if not args.no_ucx:
                for v in ucx_variants:
                    for size in sizes:
                        port = port + 1 if port < 13999 else 13400
                        ucx[v][size].append(ucx_once(args, size, v, port))
            for c in gloo_colls:
                port = port + 1 if port < 13999 else 13400
                for size, bw in gloo_once(args, c, tmp, port).items():
                    if size in gloo[c]:
                        gloo[c][size].append(bw)
            if not args.no_mpi:
                for cfg in configs:
                    for c in colls:
                        for place, _ in places_of(c):
                            for size, bw in mpi_once(args, binary, c, cfg, place).items():
                                size = nominal(size, sizes)
                                if size in mpi[(cfg, c, place)]:
                                    mpi[(cfg, c, place)][size].append(bw)

    # Open MPI's best variant per (collective, in place?, size), and the best put_bw variant per size.
    ompi, ompi_winner, put, put_winner = {}, {}, {}, {}
    for s in sizes:
        for c in colls:
            for place, _ in places_of(c):
                cands = [x for x in ((median(mpi[(cfg, c, place)][s]), cfg) for cfg in configs) if x[0] is not None]
                ompi[(c, place, s)], ompi_winner[(c, place, s)] = max(cands) if cands else (None, "-")
        puts = [x for x in ((median(ucx[v][s]), v) for v in ucx_variants) if x[0] is not None]
        put[s], put_winner[s] = max(puts) if puts else (None, None)
    # gloo's medians, in the one place it has per collective; then the best collective peer per column.
    gloo_med = {(c, place, s): median(gloo[c][s]) if c in gloo and place == GLOO_PLACE[c] else None
                for c in colls for place in (0, 1) for s in sizes}
    peer, peer_name = {}, {}
    for key in gloo_med:
        cands = [x for x in ((ompi.get(key), "ompi"), (gloo_med[key], "gloo")) if x[0] is not None]
        peer[key], peer_name[key] = max(cands) if cands else (None, "-")
    med = {key: {s: median(v[s]) for s in sizes} for key, v in psdp.items()}
    lines = ["", f"busbw in GB/s (1e9 B/s), float32 sum, {args.np} ranks, median of {args.reps}; \"ip\": in place "
             "(nccl-tests' in-place columns; MPI_IN_PLACE for Open MPI); put_bw: ucx_perftest one-sided put "
             "bandwidth, the best of UCX_TLS default/sm,self with and without huge pages; ompi: the best Open MPI "
             "variant per size and column; gloo: PyTorch's gloo backend (all-reduce in place, the others out of "
             "place, as torch runs them); peer: the better of ompi and gloo per size and column.", ""]
    gloo_cols = [(c, GLOO_PLACE[c], label) for c in colls if c in gloo for place, label in places_of(c)
                 if place == GLOO_PLACE[c]]
    header = ("| size | put_bw | " + " | ".join(f"ompi {c}{label}" for c in colls for _, label in places_of(c)) +
              "".join(f" | gloo {c}{label}" for c, _, label in gloo_cols) + " |")
    lines += ["Peers:", "", header, "|" + "---|" * (header.count("|") - 1)]
    for s in sizes:
        lines.append(f"| {human(s)} | {fmt(put[s])} | " +
                     " | ".join(fmt(ompi[(c, place, s)]) for c in colls for place, _ in places_of(c)) +
                     "".join(f" | {fmt(gloo_med[(c, place, s)])}" for c, place, _ in gloo_cols) + " |")
    big, mid = 256 << 20, 16 << 20
    # all-gather and reduce-scatter are also set against one-sided put bandwidth, every collective against the
    # best collective peer.
    put_ratios = [(c, place, label) for c in ("ag", "rs") if c in colls for place, label in places_of(c)]
    peer_ratios = [(c, place, label) for c in colls for place, label in places_of(c)]
    for m in modes:
        header = ("| size | " + " | ".join(f"{c}{label}" for c in colls for _, label in places_of(c)) + " | " +
                  " | ".join(f"{c}{label}/put" for c, _, label in put_ratios) + (" | " if put_ratios else "") +
                  " | ".join(f"{c}{label}/peer" for c, _, label in peer_ratios) + " |")
        rows = [header, "|" + "---|" * (header.count("|") - 1)]
        for s in sizes:
            bw = {(c, place): med[(m, c, place)][s] for c in colls for place in (0, 1)}
            cells = [fmt(bw[(c, place)]) for c in colls for place, _ in places_of(c)]
            cells += [fmt(ratio(bw[(c, place)], put[s])) for c, place, _ in put_ratios]
            cells += [fmt(ratio(bw[(c, place)], peer[(c, place, s)])) for c, place, _ in peer_ratios]
            rows.append(f"| {human(s)} | " + " | ".join(cells) + " |")
        lines += ["", f"psdp on {PSDP_MODES[m][0]}:", ""] + rows + [""]
        parts = []
        for c in colls:
            for place, label in places_of(c):
                parts.append(f"{c}{label} {fmt(ratio(med[(m, c, place)].get(big), med[(m, c, place)].get(mid)))}")
        lines.append(f"psdp ({m}) busbw 256M/16M: " + ", ".join(parts))
    if not args.no_ucx:
        lines.append("best put_bw variant per size: " + "; ".join(
            f"{human(s)} {(put_winner[s][0] or 'default') + (' +thp' if put_winner[s][1] else '')}"
            for s in sizes if put_winner[s]))
    lines.append("best peer per size: " + "; ".join(
        f"{human(s)} " + "/".join(peer_name[(c, place, s)] for c in colls for place, _ in places_of(c))
        for s in sizes) + " (" + "/".join(f"{c}{label}" for c in colls for _, label in places_of(c)) + ")")
    if not args.no_mpi:
        lines.append("best Open MPI variant per size: " + "; ".join(
            f"{human(s)} " + "/".join(ompi_winner[(c, place, s)] for c in colls for place, _ in places_of(c))
            for s in sizes) + " (" + "/".join(f"{c}{label}" for c in colls for _, label in places_of(c)) + ")")
        lines.append("Open MPI base: mpirun " + " ".join(MPI_BASE) + " -np " + str(args.np))
    text = "\n".join(lines) + "\n"
    print(text)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    if args.plot:
        lines_of = {}
        for c in colls:
            for place, _ in places_of(c):
                panel = {f"psdp {m}: {PSDP_MODES[m][0].split(' (')[0]}": [med[(m, c, place)][s] for s in sizes]
                         for m in modes}
                if not args.no_mpi:
                    panel["Open MPI, best variant per size"] = [ompi[(c, place, s)] for s in sizes]
                if c in gloo and place == GLOO_PLACE[c]:
                    panel["PyTorch gloo"] = [gloo_med[(c, place, s)] for s in sizes]
                if not args.no_ucx:
                    panel["ucp_put_bw (one-sided put, a bound)"] = [put[s] for s in sizes]
                lines_of[(c, place)] = panel
        draw_busbw(args.plot, sizes, colls, lines_of,
                   f"busbw against size, float32 sum, {args.np} ranks, median of {args.reps}")
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
