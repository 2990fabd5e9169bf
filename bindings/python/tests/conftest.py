"""Shared test helpers: where psdp-run is, and running workers under it with a timeout."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
# The repository's build tree, three levels up from bindings/python/tests.
DEFAULT_PSDP_RUN = TESTS / ".." / ".." / ".." / "build" / "bin" / "psdp-run"
PSDP_RUN_TIMEOUT_S = 120
# psdp-run's own timeout ends the ranks first; this one only catches a launcher that does not return.
SUBPROCESS_TIMEOUT_S = PSDP_RUN_TIMEOUT_S + 30


def psdp_run_path() -> Path:
    return Path(os.environ.get("PSDP_RUN", DEFAULT_PSDP_RUN)).resolve()


def _text(output: str | bytes | None) -> str:
    """A timed-out subprocess's output, which subprocess may hand back as bytes even in text mode."""
    return output.decode(errors="replace") if isinstance(output, bytes) else output or ""


def describe(result: subprocess.CompletedProcess) -> str:
    return (f"command: {' '.join(map(str, result.args))}\nexit status: {result.returncode}\n"
            f"--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}")


def launch(psdp_run: Path, nranks: int, *args: str) -> subprocess.CompletedProcess:
    """Runs this interpreter with `args` on nranks ranks under psdp-run, capturing the output; a launcher
    that does not return in time fails the test with what the ranks had written."""
    command = [str(psdp_run), "-n", str(nranks), "--timeout", str(PSDP_RUN_TIMEOUT_S), "--", sys.executable,
               *args]
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT_S)
    except subprocess.TimeoutExpired as expired:
        pytest.fail(f"{' '.join(command)} did not return in {SUBPROCESS_TIMEOUT_S} s\n"
                    f"--- stdout ---\n{_text(expired.stdout)}\n--- stderr ---\n{_text(expired.stderr)}")


@pytest.fixture(scope="session")
def psdp_run() -> Path:
    path = psdp_run_path()
    if not path.exists():
        pytest.fail(f"psdp-run not found at {path}: build psdp, or set PSDP_RUN")
    return path


@pytest.fixture
def run_workers(psdp_run: Path):
    """run_workers(nranks, scenario): runs mp_worker.py SCENARIO on nranks ranks; fails the test with every
    rank's output unless all of them passed."""

    def run(nranks: int, scenario: str) -> subprocess.CompletedProcess:
        result = launch(psdp_run, nranks, str(TESTS / "mp_worker.py"), scenario)
        assert result.returncode == 0, describe(result)
        passed = [line for line in result.stdout.splitlines() if line.endswith(f": {scenario} ok")]
        assert len(passed) == nranks, describe(result)
        return result

    return run
