#!/usr/bin/env bash
# Runs PROGRAM on N ranks under psdp-run with a job secret of its own, PSDP_LOG_LEVEL=debug and every log in
# a fresh directory, then has PROGRAM --check those logs for the secret once every rank has exited.
#   expect_no_secret_in_logs.sh PSDP_RUN N TIMEOUT_S PROGRAM
set -uo pipefail
psdp_run=$1 n=$2 limit=$3 program=$4
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
secret=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
PSDP_JOB_SECRET=$secret PSDP_LOG_LEVEL=debug PSDP_LOG_FILE="$logs/rank_%r.txt" \
  "$psdp_run" -n "$n" --timeout "$limit" -- "$program" || exit 1
"$program" --check "$logs" "$secret"
