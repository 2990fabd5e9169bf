#!/usr/bin/env bash
# Tests the Python bindings (bindings/python) against the library in the build tree: makes or reuses a
# virtual environment outside the repository, installs the tested versions of numpy, pytest, torch and jax
# (bindings/python/tested-versions.txt) and the bindings into it (as `pip install ./bindings/python` does: a
# wheel, not editable), then runs pytest on bindings/python/tests. torch's wheel pulls about 3 GB of CUDA
# runtime wheels: kept in the virtual environment, only a fresh machine downloads them.
#   scripts/python_tests.sh [pytest args...]
# Environment: PSDP_PYTHON_VENV (default ~/.cache/psdp/venv), PSDP_BUILD_DIR (default build).
# Needs python3 with venv (Debian: python3-venv, which scripts/setup.sh installs) and access to PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=$(realpath "${PSDP_BUILD_DIR:-build}")
venv=${PSDP_PYTHON_VENV:-$HOME/.cache/psdp/venv}
library=$build_dir/src/api/libpsdp.so
launcher=$build_dir/bin/psdp-run
for built in "$library" "$launcher"; do
  [[ -e $built ]] || { echo "python_tests: $built is missing: build psdp first (scripts/setup.sh)" >&2; exit 1; }
done

# A virtual environment whose interpreter no longer runs (python3 upgraded or removed) is made anew; a
# folder that is no virtual environment is left alone.
if ! "$venv/bin/python" -c "import sys" 2>/dev/null; then
  if [[ -e $venv && ! -e $venv/pyvenv.cfg ]]; then
    echo "python_tests: $venv exists and is not a virtual environment; set PSDP_PYTHON_VENV elsewhere" >&2
    exit 1
  fi
  echo "python_tests: creating a virtual environment in $venv"
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv"
fi
pip=("$venv/bin/python" -m pip --disable-pip-version-check --quiet)

start=$SECONDS
"${pip[@]}" install -r bindings/python/tested-versions.txt
echo "python_tests: numpy, pytest, torch and jax (bindings/python/tested-versions.txt) ready in" \
  "$((SECONDS - start)) s"
start=$SECONDS
# From a clean copy: setuptools builds in the source folder, and a build/ left there by an earlier install
# would still hold modules since removed. --force-reinstall: the version does not change with every edit.
source_copy=$(mktemp -d)
trap 'rm -rf "$source_copy"' EXIT
cp -r bindings/python/pyproject.toml bindings/python/README.md bindings/python/src "$source_copy/"
rm -rf "$source_copy"/src/*.egg-info
"${pip[@]}" install --force-reinstall --no-deps "$source_copy"
echo "python_tests: bindings installed in $((SECONDS - start)) s"

# From tests/, where no psdp package lies beside the tests: `import psdp` finds the installed one only.
# PSDP_INCLUDE_DIR: psdp.jax builds its XLA handlers against this tree's psdp.h (an installed psdp has it
# beside the library). The handlers are cached in a scratch folder, so every run builds them afresh.
include_dir=$PWD/include
handler_cache=$(mktemp -d)
trap 'rm -rf "$source_copy" "$handler_cache"' EXIT
cd bindings/python/tests
PSDP_LIBRARY=$library PSDP_RUN=$launcher PSDP_INCLUDE_DIR=$include_dir PSDP_CACHE_DIR=$handler_cache \
  "$venv/bin/python" -m pytest -p no:cacheprovider -q "$@" .
