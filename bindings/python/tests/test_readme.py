"""The README's example runs as written, on 2 ranks under psdp-run."""

import re
from pathlib import Path

from conftest import describe, launch

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_example_runs(psdp_run: Path, tmp_path: Path) -> None:
    blocks = re.findall(r"^```python\n(.*?)^```", README.read_text(), re.S | re.M)
    assert len(blocks) == 1, "the README has one Python example"
    example = tmp_path / "example.py"
    example.write_text(blocks[0] + 'print("example ok")\n')
    result = launch(psdp_run, 2, str(example))
    assert result.returncode == 0 and result.stdout.count("example ok") == 2, describe(result)
