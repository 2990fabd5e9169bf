#!/usr/bin/env bash
# Runs a command and passes only if it exits 0, its output contains every --require pattern and none of the
# --forbid patterns (grep -E): for multi-rank tests whose debug log says which algorithm each operation ran.
#   expect_log.sh [--require RE]... [--forbid RE]... -- command...
set -u
require=() forbid=()
while [[ $# -gt 0 && $1 != -- ]]; do
  case $1 in
    --require) require+=("$2"); shift 2 ;;
    --forbid) forbid+=("$2"); shift 2 ;;
    *) echo "expect_log.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
shift
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$@" >"$out" 2>&1
rc=$?
grep -vE '\[debug\]' "$out"
failed=0
[[ $rc -eq 0 ]] || { echo "expect_log.sh: the command exited $rc" >&2; failed=1; }
for re in "${require[@]}"; do
  grep -qE -- "$re" "$out" || { echo "expect_log.sh: no line matches '$re'" >&2; failed=1; }
done
for re in "${forbid[@]}"; do
  if grep -qE -- "$re" "$out"; then
    echo "expect_log.sh: a line matches '$re', e.g.: $(grep -m1 -E -- "$re" "$out")" >&2
    failed=1
  fi
done
exit $failed
