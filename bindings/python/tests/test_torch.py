"""The psdp torch backend on 2 and 3 ranks under psdp-run, each scenario of torch_worker.py a job of its own."""

import pytest

pytest.importorskip("torch", reason="torch is not installed (scripts/python_tests.sh installs it)")

from torch_worker import SCENARIOS  # noqa: E402


@pytest.mark.parametrize("nranks", [2, 3])
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_torch_backend(run_workers, tmp_path, scenario: str, nranks: int) -> None:
    run_workers(nranks, scenario, str(tmp_path / "store"), worker="torch_worker.py")
