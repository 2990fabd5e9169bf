"""The model and data the examples share: a regression MLP (16 -> 64 -> 64 -> 1, tanh) trained with SGD on a
fixed synthetic dataset. Pure numpy, so the torch and JAX examples start from the same weights and batches."""

import numpy as np

SIZES = (16, 64, 64, 1)
GLOBAL_BATCH = 64
LEARNING_RATE = 0.05
STEPS = 20


def initial_weights(seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """(weight [in, out], bias [out]) per layer, scaled as Xavier initialisation does."""
    rng = np.random.default_rng(seed)
    return [(rng.normal(0, np.sqrt(2 / (n_in + n_out)), (n_in, n_out)), np.zeros(n_out))
            for n_in, n_out in zip(SIZES[:-1], SIZES[1:])]


def batch(step: int) -> tuple[np.ndarray, np.ndarray]:
    """The global batch of `step`: inputs [GLOBAL_BATCH, 16] and targets [GLOBAL_BATCH, 1] of a smooth target
    function, the same on every rank; rank r of W trains on rows r*B/W .. (r+1)*B/W."""
    rng = np.random.default_rng(1000 + step)
    x = rng.uniform(-1, 1, (GLOBAL_BATCH, SIZES[0]))
    y = np.sin(x.sum(axis=1, keepdims=True)) + 0.1 * x[:, :1] ** 2
    return x, y


def shard(array: np.ndarray, rank: int, size: int) -> np.ndarray:
    rows = len(array) // size
    return array[rank * rows:(rank + 1) * rows]


def report(name: str, distributed: list[float], single: list[float], tolerance: float) -> bool:
    """Prints both loss curves side by side; True if they agree within `tolerance` (relative)."""
    print(f"{name}: loss per step, data-parallel over psdp vs single process")
    worst = 0.0
    for step, (a, b) in enumerate(zip(distributed, single, strict=True)):
        difference = abs(a - b) / max(abs(b), 1e-30)
        worst = max(worst, difference)
        print(f"  step {step:2d}  {a:.10f}  {b:.10f}  rel. diff {difference:.1e}")
    agree = worst <= tolerance
    print(f"{name}: largest relative difference {worst:.1e} ({'within' if agree else 'ABOVE'} {tolerance:.0e})")
    return agree
