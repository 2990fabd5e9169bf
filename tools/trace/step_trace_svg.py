#!/usr/bin/env python3
"""Draws a step trace written by `psdp-perf step --trace FILE` (Chrome trace-event JSON) as an SVG timeline,
for documents where Perfetto is not at hand: one band per rank, in it one row per stage, each chunk's stage a
bar from its begin to its end, labelled with the chunk. Python's standard library only.

usage: step_trace_svg.py TRACE.json OUT.svg [--title TEXT]"""
import json
import sys
from collections import defaultdict

STAGES = ["reduce in group", "reduce across replicas", "update", "gather across replicas", "gather in group"]
COLOURS = {"reduce in group": "#4e79a7", "reduce across replicas": "#76b7b2", "update": "#f28e2b",
           "gather across replicas": "#b07aa1", "gather in group": "#59a14f"}
WIDTH, LEFT, ROW, GAP, TOP = 1100, 190, 16, 14, 40


def spans_of(trace):
    """(rank, stage) -> [(begin_us, end_us, chunk)]"""
    open_at = {}
    spans = defaultdict(list)
    for e in trace["traceEvents"]:
        if e.get("ph") == "b":
            open_at[(e["pid"], e["name"], e["id"])] = e["ts"]
        elif e.get("ph") == "e":
            begin = open_at.pop((e["pid"], e["name"], e["id"]), None)
            if begin is not None:
                spans[(e["pid"], e["name"])].append((begin, e["ts"], e["id"]))
    return spans


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    title = sys.argv[sys.argv.index("--title") + 1] if "--title" in sys.argv else sys.argv[1]
    with open(sys.argv[1]) as f:
        spans = spans_of(json.load(f))
    if not spans:
        print(f"{sys.argv[1]}: no stage spans")
        return 1
    ranks = sorted({r for r, _ in spans})
    stages = [s for s in STAGES if any((r, s) in spans for r in ranks)]
    end = max(e for v in spans.values() for _, e, _ in v)
    scale = (WIDTH - LEFT - 20) / end
    height = TOP + len(ranks) * ((len(stages) + 1) * ROW + GAP) + 40
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" font-family="sans-serif" '
           f'font-size="11">', f'<rect width="{WIDTH}" height="{height}" fill="white"/>',
           f'<text x="10" y="20" font-size="13">{title}</text>']
    y = TOP
    for r in ranks:
        out.append(f'<text x="10" y="{y + 12}" font-weight="bold">rank {r}</text>')
        y += ROW
        for s in stages:
            out.append(f'<text x="24" y="{y + 12}">{s}</text>')
            out.append(f'<line x1="{LEFT}" y1="{y + ROW}" x2="{WIDTH - 20}" y2="{y + ROW}" stroke="#eee"/>')
            for b, e, chunk in spans.get((r, s), []):
                x, w = LEFT + b * scale, max(1.0, (e - b) * scale)
                out.append(f'<rect x="{x:.1f}" y="{y + 2}" width="{w:.1f}" height="{ROW - 4}" fill="{COLOURS[s]}" '
                           f'stroke="white" stroke-width="0.5"><title>chunk {chunk}: {s}, {b / 1e3:.2f}-'
                           f'{e / 1e3:.2f} ms</title></rect>')
                if w > 14:
                    out.append(f'<text x="{x + 2:.1f}" y="{y + ROW - 5}" font-size="8" fill="white">{chunk}</text>')
            y += ROW
        y += GAP
    for k in range(11):  # time axis in ms
        x = LEFT + k * (WIDTH - LEFT - 20) / 10
        out.append(f'<line x1="{x:.1f}" y1="{TOP - 4}" x2="{x:.1f}" y2="{y}" stroke="#ddd" stroke-width="0.5"/>')
        out.append(f'<text x="{x:.1f}" y="{y + 14}" text-anchor="middle">{end * k / 10 / 1e3:.0f} ms</text>')
    out.append("</svg>")
    with open(sys.argv[2], "w") as f:
        f.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
