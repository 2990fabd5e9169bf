#!/usr/bin/env python3
"""Runs psdp-perf-teams on 2 ranks with PSDP_TRACE_FILE and checks the traces a user would open in Perfetto:
one valid trace-event JSON per rank, slices of both teams' collectives on their own tracks, every slice named
after its operation, and, in the interleaved iterations, a reduce-scatter of one team and an all-gather of
the other in flight at the same time (their slices overlap). Exits 1 naming what is wrong.

usage: check_teams_trace.py PSDP_RUN PSDP_PERF_TEAMS"""
import json
import os
import subprocess
import sys
import tempfile


def main() -> int:
    run, teams = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, PSDP_TRACE_FILE=os.path.join(tmp, "trace.%r.json"), PSDP_TIMEOUT="60")
        done = subprocess.run([run, "-n", "2", "--timeout", "100", "--", teams, "-b", "4M", "-e", "4M", "-m", "4",
                               "-n", "4", "-w", "1", "-c", "1"], env=env, capture_output=True, text=True, timeout=110)
        if done.returncode != 0:
            print(f"psdp-perf-teams exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
            return 1
        problems = []
        for rank in (0, 1):
            path = os.path.join(tmp, f"trace.{rank}.json")
            try:
                with open(path) as f:
                    trace = json.load(f)
            except (OSError, ValueError) as e:
                problems.append(f"rank {rank}: no readable trace at {path}: {e}")
                continue
            slices = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
            rs = [e for e in slices if e["name"].startswith("reduce-scatter")]
            # Track 0 is the world, where the benchmark gathers its timings: not one of the two teams.
            ag = [e for e in slices if e["name"].startswith("all-gather") and e["tid"] != 0]
            if not rs or not ag:
                problems.append(f"rank {rank}: {len(rs)} reduce-scatter and {len(ag)} all-gather slices")
                continue
            rs_tracks = {e["tid"] for e in rs}
            ag_tracks = {e["tid"] for e in ag}
            if rs_tracks & ag_tracks:
                problems.append(f"rank {rank}: the teams share a track: {rs_tracks} and {ag_tracks}")
            if any(e["pid"] != rank for e in slices):
                problems.append(f"rank {rank}: slices not under pid {rank}")
            overlapping = sum(1 for a in rs for b in ag
                              if a["ts"] < b["ts"] + b["dur"] and b["ts"] < a["ts"] + a["dur"])
            if overlapping == 0:
                problems.append(f"rank {rank}: no reduce-scatter overlaps an all-gather in time")
            print(f"rank {rank}: {len(rs)} reduce-scatter and {len(ag)} all-gather slices, {overlapping} "
                  f"overlapping pairs, tracks {sorted(rs_tracks)} and {sorted(ag_tracks)}")
        for p in problems:
            print("FAIL:", p)
        return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
