#!/usr/bin/env bash
# psdp-perf next to ucx_perftest and Open MPI on this machine; see perf/README.md. Not part of CI.
#   perf/compare/run_compare.sh [--build DIR] [--reps 3] [--output table.md] ...   (--help for all options)
set -euo pipefail
exec python3 "$(dirname "$(readlink -f "$0")")/run_compare.py" "$@"
