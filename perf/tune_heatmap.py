#!/usr/bin/env python3
"""Draws psdp-tune's sweep (its --json file) as a heatmap PNG: a panel per collective, a row per candidate, a
column per size; each cell is the candidate's median time over the best median at that size (1.00 is the
best; darker is slower) and the winner of each size is boxed, as psdp-tune chose it. With an engine sweep
(psdp-tune --model), a panel per plan chunk size: a row per window, a column per grouping, each cell the
step's median time over the best (blank: not swept), the chosen setting boxed.

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
    collectives = sweep["collectives"]
    engine = sweep.get("engine", [])
    if not collectives and not engine:
        print(f"tune_heatmap.py: {argv[1]} holds no sweep", file=sys.stderr)
        return 2
    names = [c["name"] for c in sweep["candidates"]]
    heights = [0.42 * len(names) + 1.2 for _ in collectives]
    heights += [0.42 * len({c["window"] for c in e["candidates"]}) + 1.2 for e in engine]
    width = 1.1 * max([len(p["sizes"]) for p in collectives] + [5]) + 3
    fig, axes = plt.subplots(len(heights), 1, figsize=(width, sum(heights)), squeeze=False,
                             gridspec_kw={"height_ratios": heights})

    def draw(ax, ratio, boxed, xlabels, ylabels, title):
        masked = [[float("nan") if v is None else v for v in row] for row in ratio]
        image = ax.imshow(masked, cmap="magma_r", vmin=1.0, vmax=2.0, aspect="auto")
        for y, row in enumerate(ratio):
            for x, value in enumerate(row):
                if value is not None:
                    ax.text(x, y, f"{value:.2f}", ha="center", va="center", fontsize=7,
                            color="white" if value > 1.5 else "black")
        for x, y in boxed:
            ax.add_patch(Rectangle((x - 0.5, y - 0.5), 1, 1, fill=False, edgecolor="#00a0ff", linewidth=2))
        ax.set_xticks(range(len(xlabels)), xlabels)
        ax.set_yticks(range(len(ylabels)), ylabels)
        ax.set_title(title, fontsize=10)
        fig.colorbar(image, ax=ax, fraction=0.02)

    for ax, panel in zip(axes[:len(collectives), 0], collectives):
        medians = [[statistics.median(reps) for reps in by_size] for by_size in panel["seconds"]]
        best = [min(m[s] for m in medians) for s in range(len(panel["sizes"]))]
        ratio = [[m[s] / best[s] for s in range(len(best))] for m in medians]
        draw(ax, ratio, list(enumerate(panel["winners"])), [size_text(n) for n in panel["sizes"]], names,
             f"{panel['collective']}, {sweep['nranks']} ranks: median time / best (boxed: chosen)")
    for ax, entry in zip(axes[len(collectives):, 0], engine):
        candidates = entry["candidates"]
        windows = sorted({c["window"] for c in candidates})
        groupings = sorted({c["grouping"] for c in candidates})
        medians = [statistics.median(reps) for reps in entry["seconds"]]
        best = min(medians)
        ratio = [[None] * len(groupings) for _ in windows]
        for c, median in zip(candidates, medians):
            ratio[windows.index(c["window"])][groupings.index(c["grouping"])] = median / best
        won = candidates[entry["winner"]]
        draw(ax, ratio, [(groupings.index(won["grouping"]), windows.index(won["window"]))],
             [f"x{g}" for g in groupings], [f"window {w}" for w in windows],
             f"engine, {sweep['nranks']} ranks, plan chunks of {size_text(entry['chunk_bytes'])} "
             f"({entry['chunks']}): step time / best by grouping (boxed: chosen)")
    fig.suptitle(sweep["signature"], fontsize=9)
    fig.tight_layout()
    fig.savefig(argv[2], dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
