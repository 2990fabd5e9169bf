#!/usr/bin/env python3
"""Draws psdp-tune's sweep (its --json file) as a heatmap PNG: a panel per collective, a row per candidate, a
column per size; each cell is the candidate's median time over the best median at that size (1.00 is the
best; darker is slower) and the winner of each size is boxed, as psdp-tune chose it.

    python3 perf/tune_heatmap.py sweep.json sweep.png

Needs matplotlib (Debian's python3-matplotlib)."""
import json
import statistics
import sys


def size_text(n):
    for unit, suffix in ((1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")):
        if n >= unit and n % unit == 0:
            return f"{n // unit}{suffix}"
    return str(n)


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        import matplotlib
    except ImportError:
        print("tune_heatmap.py: matplotlib is not installed (apt-get install python3-matplotlib)", file=sys.stderr)
        return 3
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    with open(argv[1]) as f:
        sweep = json.load(f)
    names = [c["name"] for c in sweep["candidates"]]
    panels = sweep["collectives"]
    fig, axes = plt.subplots(len(panels), 1, figsize=(1.1 * max(len(p["sizes"]) for p in panels) + 3,
                                                      0.42 * len(names) * len(panels) + 1.2 * len(panels)),
                             squeeze=False)
    for ax, panel in zip(axes[:, 0], panels):
        medians = [[statistics.median(reps) for reps in by_size] for by_size in panel["seconds"]]
        best = [min(m[s] for m in medians) for s in range(len(panel["sizes"]))]
        ratio = [[m[s] / best[s] for s in range(len(best))] for m in medians]
        image = ax.imshow(ratio, cmap="magma_r", vmin=1.0, vmax=2.0, aspect="auto")
        for c, row in enumerate(ratio):
            for s, value in enumerate(row):
                ax.text(s, c, f"{value:.2f}", ha="center", va="center", fontsize=7,
                        color="white" if value > 1.5 else "black")
        for s, winner in enumerate(panel["winners"]):
            ax.add_patch(Rectangle((s - 0.5, winner - 0.5), 1, 1, fill=False, edgecolor="#00a0ff", linewidth=2))
        ax.set_xticks(range(len(panel["sizes"])), [size_text(n) for n in panel["sizes"]])
        ax.set_yticks(range(len(names)), names)
        ax.set_title(f"{panel['collective']}, {sweep['nranks']} ranks: median time / best (boxed: chosen)",
                     fontsize=10)
        fig.colorbar(image, ax=ax, fraction=0.02)
    fig.suptitle(sweep["signature"], fontsize=9)
    fig.tight_layout()
    fig.savefig(argv[2], dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
