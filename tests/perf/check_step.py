#!/usr/bin/env python3
"""Runs psdp-perf step on a small model-shaped state through psdp-run and checks what a user gets from it:
its table (every mode with a time, the pipelined/bulk ratio), its -J JSON (every field, times positive, DRAM
bytes of both modes, the precision), in float32 and in mixed precision, its --trace file (valid trace-event JSON; per rank, per chunk, one begin and one end of
every stage the layout has, each end after its begin, the update after the reductions and the gathers after
the update), and PSDP_TRACE_FILE's per-rank traces carrying the step's stage tracks. Exits 1 naming what is
wrong.

usage: check_step.py PSDP_RUN PSDP_PERF MODEL_FILE"""
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict

# (extra arguments, ranks, stages the layout has)
CASES = [
    (["--group", "2"], 2, {"reduce in group", "update", "gather in group"}),
    (["--group", "1", "--per-tensor"], 2, {"reduce in group", "reduce across replicas", "update", "gather in group"}),
    (["--group", "2", "--level", "world"], 4,
     {"reduce in group", "reduce across replicas", "update", "gather across replicas", "gather in group"}),
    (["--group", "1", "--precision", "bf16"], 2,
     {"reduce in group", "reduce across replicas", "update", "gather in group"}),
    (["--group", "2", "--precision", "bf16", "--partials", "bf16"], 2, {"reduce in group", "update", "gather in group"}),
]


def check_trace(path, ranks, stages, problems, label):
    with open(path) as f:
        trace = json.load(f)
    spans = defaultdict(dict)  # (rank, chunk, stage) -> {"b": ts, "e": ts}
    for e in trace["traceEvents"]:
        if e["ph"] not in ("b", "e"):
            continue
        key = (e["pid"], e["id"], e["name"])
        if e["ph"] in spans[key]:
            problems.append(f"{label}: rank {e['pid']} chunk {e['id']} {e['name']}: two '{e['ph']}' events")
        spans[key][e["ph"]] = e["ts"]
    chunks = {c for (_, c, _) in spans}
    if not chunks:
        problems.append(f"{label}: the trace has no stage events")
        return
    for rank in range(ranks):
        for chunk in chunks:
            times = {}
            for stage in stages:
                pair = spans.get((rank, chunk, stage), {})
                if "b" not in pair or "e" not in pair or pair["e"] < pair["b"]:
                    problems.append(f"{label}: rank {rank} chunk {chunk} {stage}: begin/end {pair}")
                    continue
                times[stage] = pair
            if len(times) != len(stages):
                continue
            reduced = max(times[s]["e"] for s in stages if s.startswith("reduce"))
            if times["update"]["b"] < reduced or times["gather in group"]["b"] < times["update"]["e"]:
                problems.append(f"{label}: rank {rank} chunk {chunk}: stages out of order {times}")
    extra = {s for (_, _, s) in spans} - stages
    if extra:
        problems.append(f"{label}: stages the layout does not have: {extra}")
    print(f"{label}: {len(chunks)} chunks, {len(spans)} stage spans over {ranks} ranks")


def main() -> int:
    run, perf, model = sys.argv[1], sys.argv[2], sys.argv[3]
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        for extra, ranks, stages in CASES:
            label = " ".join(extra) + f" at W={ranks}"
            trace, result = os.path.join(tmp, "step.json"), os.path.join(tmp, "result.json")
            env = dict(os.environ, PSDP_TIMEOUT="60", PSDP_TRACE_FILE=os.path.join(tmp, "lib.%r.json"))
            cmd = [run, "-n", str(ranks), "--timeout", "170", "--", perf, "step", "--model", model, "--scale", "0.01",
                   "--chunk-bytes", "1M", "--iters", "2", "--warmup", "1", "--trace", trace, "-J", result] + extra
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180)
            if done.returncode != 0:
                problems.append(f"{label}: exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
                continue
            for mode in ("pipelined", "bulk", "comm only", "update only"):
                if f"[0] {mode} " not in done.stdout:
                    problems.append(f"{label}: no '{mode}' row in:\n{done.stdout}")
            if "pipelined / bulk step time" not in done.stdout:
                problems.append(f"{label}: no pipelined / bulk ratio")
            with open(result) as f:
                r = json.load(f)
            for key in ("model", "parameters", "chunks", "sent_inside_bytes", "sent_across_bytes", "dram_bytes",
                        "seconds", "overlap", "pipelined_over_bulk"):
                if key not in r:
                    problems.append(f"{label}: -J lacks '{key}'")
            if any(v["median"] <= 0 for v in r.get("seconds", {}).values()) or len(r.get("seconds", {})) != 4:
                problems.append(f"{label}: -J seconds {r.get('seconds')}")
            if not (r.get("dram_bytes", {}).get("pipelined", 0) > 0 and r["dram_bytes"].get("bulk", 0) > 0):
                problems.append(f"{label}: -J dram_bytes {r.get('dram_bytes')}")
            want = ("bf16" if "bf16" in extra else "fp32", "bf16" if "--partials" in extra else "float32")
            if (r.get("precision"), r.get("partial_sums")) != want:
                problems.append(f"{label}: -J precision {r.get('precision')}, partial sums {r.get('partial_sums')}")
            if (ranks > 2 or "--group" in extra and extra[1] == "1") and r.get("sent_across_bytes", 0) <= 0:
                problems.append(f"{label}: replicas but no bytes sent across them")
            check_trace(trace, ranks, stages, problems, label)
            for rank in range(ranks):
                with open(os.path.join(tmp, f"lib.{rank}.json")) as f:
                    lib = json.load(f)
                names = {e["args"]["name"] for e in lib["traceEvents"] if e.get("name") == "thread_name"}
                if not any(n.startswith("step: reduce in group") for n in names):
                    problems.append(f"{label}: rank {rank}'s PSDP_TRACE_FILE has no step track: {sorted(names)}")
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
