"""Every scenario of mp_worker.py on 2 and 3 ranks, each a job of its own under psdp-run."""

import pytest

from mp_worker import SCENARIOS


@pytest.mark.parametrize("nranks", [2, 3])
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_scenario(run_workers, scenario: str, nranks: int) -> None:
    run_workers(nranks, scenario)
