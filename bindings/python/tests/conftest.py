"""Shared test helpers: where psdp-run is, and running workers under it with a timeout."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
# The repository's build tree, three levels up from bindings/python/tests.
DEFAULT_PSDP_RUN = TESTS / ".." / ".." / ".." / "build" / "bin" / "psdp-run"
PSDP_RUN_TIMEOUT_S = 120
# psdp-run's own timeout ends the ranks first; this one catches a launcher that does not return (torchrun has none).
SUBPROCESS_TIMEOUT_S = PSDP_RUN_TIMEOUT_S + 30


def psdp_run_path() -> Path:
    return Path(os.environ.get("PSDP_RUN", DEFAULT_PSDP_RUN)).resolve()


def _text(output: str | bytes | None) -> str:
    """A timed-out subprocess's output, which subprocess may hand back as bytes even in text mode."""
    return output.decode(errors="replace") if isinstance(output, bytes) else output or ""


def describe(result: subprocess.CompletedProcess) -> str:
    return (f"command: {' '.join(map(str, result.args))}\nexit status: {result.returncode}\n"
            f"--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}")


def run_job(command: list[str]) -> subprocess.CompletedProcess:
    """Runs a launcher (psdp-run, torchrun) in a process group of its own, capturing the output; one that does
    not return in time is killed with every process it started, and fails the test with what they wrote."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=SUBPROCESS_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        pytest.fail(f"{' '.join(command)} did not return in {SUBPROCESS_TIMEOUT_S} s\n"
                    f"--- stdout ---\n{_text(stdout)}\n--- stderr ---\n{_text(stderr)}")
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def launch(psdp_run: Path, nranks: int, *args: str) -> subprocess.CompletedProcess:
    """Runs this interpreter with `args` on nranks ranks under psdp-run (see run_job)."""
    return run_job([str(psdp_run), "-n", str(nranks), "--timeout", str(PSDP_RUN_TIMEOUT_S), "--", sys.executable,
                    *args])


@pytest.fixture(scope="session")
def psdp_run() -> Path:
    path = psdp_run_path()
    if not path.exists():
        pytest.fail(f"psdp-run not found at {path}: build psdp, or set PSDP_RUN")
    return path


@pytest.fixture
def run_workers(psdp_run: Path):
    """run_workers(nranks, scenario, *args, worker="mp_worker.py"): runs WORKER SCENARIO ARGS on nranks ranks;
    fails the test with every rank's output unless all of them passed."""

    def run(nranks: int, scenario: str, *args: str, worker: str = "mp_worker.py") -> subprocess.CompletedProcess:
        result = launch(psdp_run, nranks, str(TESTS / worker), scenario, *args)
        assert result.returncode == 0, describe(result)
        passed = [line for line in result.stdout.splitlines() if line.endswith(f": {scenario} ok")]
        assert len(passed) == nranks, describe(result)
        return result

    return run
