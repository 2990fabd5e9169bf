#!/usr/bin/env bash
# psdp-perf next to ucx_perftest and Open MPI on this machine; see perf/README.md. Not part of CI.
#   perf/compare/run_compare.sh [--build DIR] [--reps 3] [--output table.md] ...   (--help for all options)
set -euo pipefail
# Debian's python3 where there is one: --plot needs its python3-matplotlib, and another python3 (pyenv, a venv)
# may come first on PATH.
python=/usr/bin/python3
[[ -x $python ]] || python=python3
exec "$python" "$(dirname "$(readlink -f "$0")")/run_compare.py" "$@"
