"""The examples in bindings/python/examples run as their docstrings say, on 2 ranks, and their loss curves
match a single process (each example checks that itself and exits non-zero otherwise)."""

import subprocess
import sys

import pytest

from conftest import TESTS, describe, launch, run_job

EXAMPLES = TESTS.parent / "examples"


def expect_agreement(result: subprocess.CompletedProcess) -> None:
    assert result.returncode == 0, describe(result)
    assert "largest relative difference" in result.stdout and "(within" in result.stdout, describe(result)


def test_torch_ddp_under_torchrun() -> None:
    pytest.importorskip("torch", reason="torch is not installed (scripts/python_tests.sh installs it)")
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
               str(EXAMPLES / "torch_ddp.py")]
    expect_agreement(run_job(command))


def test_jax_data_parallel_under_psdp_run(psdp_run) -> None:
    pytest.importorskip("jax", reason="jax is not installed (scripts/python_tests.sh installs it)")
    expect_agreement(launch(psdp_run, 2, str(EXAMPLES / "jax_data_parallel.py")))
