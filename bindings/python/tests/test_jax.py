"""psdp.jax on 2 and 3 ranks under psdp-run, each scenario of jax_worker.py a job of its own."""

import pytest

pytest.importorskip("jax", reason="jax is not installed (scripts/python_tests.sh installs it)")

from jax_worker import SCENARIOS  # noqa: E402


@pytest.mark.parametrize("nranks", [2, 3])
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_jax(run_workers, scenario: str, nranks: int) -> None:
    run_workers(nranks, scenario, worker="jax_worker.py")


def test_handlers_compile_without_warnings(tmp_path) -> None:
    """handlers.cc is clean under -Wall -Wextra -Werror (jaxlib's headers come in as system headers)."""
    import subprocess

    from psdp.jax import build

    library = build.loaded_libpsdp()
    command = build.compile_command(tmp_path / "handlers.so", library, build.psdp_include_dir(library))
    command += ["-Wall", "-Wextra", "-Werror"]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, f"{' '.join(command)}\n{result.stderr}"
