"""Finds or builds libpsdp_jax_ffi.so, the XLA FFI handlers of psdp.jax (handlers.cc).

The handlers are compiled on first use against the FFI headers of the jaxlib installed (jax.ffi.include_dir())
and psdp.h, and linked to the libpsdp.so the bindings loaded; the result is cached under
$PSDP_CACHE_DIR (default $XDG_CACHE_HOME/psdp or ~/.cache/psdp), keyed by the source, psdp.h, jaxlib's version
and the library's path, so a later run, or another rank, loads it at once. Needs a C++17 compiler ($CXX, default
c++) the first time. Where compute nodes have none, build it once and point PSDP_JAX_FFI_LIBRARY at it:

    python -m psdp.jax.build --output /shared/libpsdp_jax_ffi.so

psdp.h is looked for in $PSDP_INCLUDE_DIR, then beside the library (<prefix>/include for <prefix>/lib), then in
the compiler's own search path.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import jax
import jaxlib

SOURCE = Path(__file__).with_name("handlers.cc")
LIBRARY_NAME = "libpsdp_jax_ffi.so"


class BuildError(RuntimeError):
    """The handler library could not be built; the message holds the compiler's command and output."""


def loaded_libpsdp() -> Path:
    """The file of the libpsdp.so this process has loaded (importing the psdp package loads it)."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split(maxsplit=5)[-1].strip()
            if Path(path).name.startswith("libpsdp.so"):
                return Path(path)
    raise BuildError("libpsdp.so is not loaded in this process; import psdp first")


def psdp_include_dir(library: Path) -> Path | None:
    """The folder holding psdp/psdp.h, or None to leave it to the compiler's search path."""
    explicit = os.environ.get("PSDP_INCLUDE_DIR")
    if explicit:
        if not (Path(explicit) / "psdp" / "psdp.h").is_file():
            raise BuildError(f"PSDP_INCLUDE_DIR={explicit} holds no psdp/psdp.h")
        return Path(explicit)
    beside = library.parent.parent / "include"
    return beside if (beside / "psdp" / "psdp.h").is_file() else None


def compile_command(output: Path, library: Path, include: Path | None) -> list[str]:
    command = shlex.split(os.environ.get("CXX", "c++")) + ["-std=c++17", "-O2", "-fPIC", "-shared"]
    if include is not None:
        command += ["-I", str(include)]
    command += ["-isystem", jax.ffi.include_dir(), str(SOURCE), "-o", str(output), "-L", str(library.parent),
                f"-l:{library.name}", f"-Wl,-rpath,{library.parent}"]
    return command


def build(output: Path) -> Path:
    """Compiles the handlers into `output` (written whole, then renamed: ranks building at once are safe)."""
    library = loaded_libpsdp()
    output.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=output.parent, prefix=".build-", suffix=".so", delete=False) as temporary:
        partial = Path(temporary.name)
    command = compile_command(partial, library, psdp_include_dir(library))
    try:
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            raise BuildError(f"building psdp's JAX handlers failed ({shlex.join(command)}):\n{result.stderr}"
                             "\n(set PSDP_INCLUDE_DIR to the folder holding psdp/psdp.h, CXX to a C++17 compiler, "
                             "or PSDP_JAX_FFI_LIBRARY to a library built with python -m psdp.jax.build)")
        os.replace(partial, output)
    finally:
        partial.unlink(missing_ok=True)
    return output


def _cache_key(library: Path) -> str:
    digest = hashlib.sha256(SOURCE.read_bytes())
    include = psdp_include_dir(library)
    if include is not None:
        digest.update((include / "psdp" / "psdp.h").read_bytes())
    digest.update(f"{jaxlib.__version__}\0{library.resolve()}\0{os.environ.get('CXX', 'c++')}".encode())
    return digest.hexdigest()[:20]


def cache_dir() -> Path:
    explicit = os.environ.get("PSDP_CACHE_DIR")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "psdp"


def library_path() -> Path:
    """PSDP_JAX_FFI_LIBRARY if set, else the cached build for this jaxlib and libpsdp, built if missing."""
    explicit = os.environ.get("PSDP_JAX_FFI_LIBRARY")
    if explicit:
        return Path(explicit)
    path = cache_dir() / "jax-ffi" / _cache_key(loaded_libpsdp()) / LIBRARY_NAME
    return path if path.is_file() else build(path)


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m psdp.jax.build", description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, help="where to write the library (default: the cache)")
    args = parser.parse_args()
    path = build(args.output) if args.output else library_path()
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
