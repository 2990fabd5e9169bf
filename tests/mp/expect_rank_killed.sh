#!/usr/bin/env bash
# Runs a fault-injection program on N ranks with psdp-run --keep-going and passes only if the victim was
# killed by SIGKILL (and psdp-run exited 137 for it) and every other rank exited 0 after printing its report
# (". passed, 0 failed"). The program gets the victim, an empty scratch directory and any further arguments.
#   expect_rank_killed.sh PSDP_RUN N TIMEOUT_S VICTIM PROGRAM [ARGS...]
set -uo pipefail
psdp_run=$1 n=$2 limit=$3 victim=$4 program=$5
shift 5
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
output=$("$psdp_run" -n "$n" --timeout "$limit" --keep-going -- "$program" "$victim" "$scratch" "$@" 2>&1)
status=$?
echo "$output"
fail() { echo "expect_rank_killed: $*"; exit 1; }
[[ $status -eq 137 ]] || fail "psdp-run exited $status, expected 137 (the victim's SIGKILL)"
grep -q "rank $victim was killed by signal 9" <<<"$output" || fail "rank $victim was not killed by SIGKILL"
killed=$(grep -c "was killed by signal" <<<"$output")
[[ $killed -eq 1 ]] || fail "$killed ranks were killed, expected only rank $victim"
! grep -q "exited with code" <<<"$output" || fail "a surviving rank exited with an error"
passed=$(grep -cE "rank [0-9]+: [0-9]+ passed, 0 failed" <<<"$output")
[[ $passed -eq $((n - 1)) ]] || fail "$passed of $((n - 1)) survivors reported success"
echo "expect_rank_killed: rank $victim killed, $passed survivors saw the error in time"
