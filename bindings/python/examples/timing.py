"""Timing shared by the benchmarks: per-call times of several ways to make one call, alternated."""

import statistics
import time
from collections.abc import Callable


def interleaved_medians_us(paths: dict[str, Callable[[], object]], rounds: int, calls: int = 5000,
                           warmup: int = 200) -> dict[str, float]:
    """Microseconds per call of each path: `rounds` times, every path in turn runs `warmup` untimed calls,
    then `calls` timed ones; the median of its rounds. Alternating the paths spreads the machine's noise over
    all of them alike."""
    samples: dict[str, list[float]] = {path: [] for path in paths}
    for _ in range(rounds):
        for path, call in paths.items():
            for _ in range(warmup):
                call()
            start = time.perf_counter()
            for _ in range(calls):
                call()
            samples[path].append((time.perf_counter() - start) / calls)
    return {path: statistics.median(times) * 1e6 for path, times in samples.items()}
