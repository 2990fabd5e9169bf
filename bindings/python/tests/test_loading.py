"""How `import psdp` finds libpsdp.so, and what it says when it cannot. Each case imports psdp in a fresh
interpreter, since the library is loaded once at import."""

import ctypes
import ctypes.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import describe
from psdp import _library
from psdp.errors import LibraryVersionError

REPORT_ERROR = """
try:
    import psdp
except ImportError as error:
    print(type(error).__name__)
    print(error)
else:
    print("loaded", psdp.library_name(), psdp.library_version())
"""


def import_psdp(**env: str | None) -> str:
    environment = {k: v for k, v in os.environ.items() if k not in env}
    environment.update({k: v for k, v in env.items() if v is not None})
    result = subprocess.run([sys.executable, "-c", REPORT_ERROR], capture_output=True, text=True, timeout=60,
                            env=environment)
    assert result.returncode == 0, describe(result)
    return result.stdout


def test_missing_library_file_is_a_clear_import_error(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "libpsdp.so"
    output = import_psdp(PSDP_LIBRARY=str(missing))
    assert output.startswith("LibraryLoadError\n"), output
    assert f"PSDP_LIBRARY={missing}" in output, output
    assert "No such file" in output, output
    assert "cmake --install" in output and "set PSDP_LIBRARY" in output, output
    assert "nothing else was tried" in output, output


def test_a_library_that_is_not_psdp_is_refused() -> None:
    libc = ctypes.util.find_library("c")
    assert libc
    output = import_psdp(PSDP_LIBRARY=libc)
    assert output.startswith("LibraryVersionError\n"), output
    assert "no psdp_get_version" in output, output


def test_found_on_the_loader_path_without_psdp_library() -> None:
    built = os.environ.get("PSDP_LIBRARY")
    if not built:
        pytest.skip("PSDP_LIBRARY does not name a build of libpsdp.so to put on the loader path")
    output = import_psdp(PSDP_LIBRARY=None, LD_LIBRARY_PATH=str(Path(built).resolve().parent))
    assert output.startswith("loaded libpsdp.so"), output


def test_not_found_anywhere_lists_every_place_tried() -> None:
    output = import_psdp(PSDP_LIBRARY=None, LD_LIBRARY_PATH=None)
    if output.startswith("loaded"):
        pytest.skip(f"libpsdp.so is installed where the loader finds it: {output}")
    assert output.startswith("LibraryLoadError\n"), output
    assert 'ctypes.util.find_library("psdp")' in output, output
    assert "libpsdp.so on the dynamic loader's search path" in output, output
    assert "cmake --install" in output, output


class FakeLibrary:
    """Stands in for a loaded libpsdp.so whose psdp_get_version reports `code`."""

    def __init__(self, code: int) -> None:
        def psdp_get_version(version_p) -> int:
            version_p._obj.value = code
            return 0

        self.psdp_get_version = psdp_get_version


@pytest.mark.parametrize("code", [200, 205, 300, 9900])
def test_versions_of_the_same_major_at_least_the_header_load(code: int) -> None:
    assert _library._check_version(FakeLibrary(code), "fake") == (0, code // 100 % 100, code % 100)


@pytest.mark.parametrize("code", [10000, 10200, 100, 199])
def test_other_major_versions_and_older_libraries_are_refused(code: int) -> None:
    with pytest.raises(LibraryVersionError, match="these bindings need 0.x, at least 0.2.0"):
        _library._check_version(FakeLibrary(code), "fake")


def test_every_declared_function_is_in_the_loaded_library() -> None:
    for name in _library._PROTOTYPES:
        assert getattr(_library.lib, name).argtypes is not None, name
