"""The README's Python examples run as written, on 2 ranks: the torch one under torchrun, as the README runs
it, the others under psdp-run."""

import re
import sys
from pathlib import Path

import pytest

from conftest import describe, launch, run_job

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```", README.read_text(), re.S | re.M)


def test_readme_has_its_examples() -> None:
    assert len(BLOCKS) == 3, "the README has a bindings, a torch and a JAX example"


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_example_runs(psdp_run: Path, tmp_path: Path, index: int) -> None:
    block = BLOCKS[index]
    for module in ("torch", "jax"):
        if f"import {module}" in block:
            pytest.importorskip(module, reason=f"{module} is not installed (scripts/python_tests.sh installs it)")
    example = tmp_path / "example.py"
    example.write_text(block + 'print("example ok")\n')
    if "init_process_group" in block:
        result = run_job([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                          str(example)])
    else:
        result = launch(psdp_run, 2, str(example))
    assert result.returncode == 0 and result.stdout.count("example ok") == 2, describe(result)
