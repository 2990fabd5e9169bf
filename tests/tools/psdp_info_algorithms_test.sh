#!/usr/bin/env bash
# psdp-info --algorithms prints the table in force: the built-in rules by default, the rules of
# PSDP_ALGORITHMS first and those of PSDP_ALGORITHM next, each line parseable and labelled with its origin,
# or the host-ring provider's one ring rule whatever they say; a malformed rule or an unknown provider makes
# it exit 1 naming it. psdp-info --providers lists both host providers.
set -uo pipefail
info=$1
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
expect_line() {  # text, line number, wanted prefix, wanted origin
  local line
  line=$(sed -n "$2p" <<<"$1")
  [[ "$line" == "$3"* && "$line" == *"# $4" ]] || fail "line $2 is '$line', wanted '$3 ... # $4'"
}

unset PSDP_ALGORITHMS PSDP_ALGORITHM PSDP_DETERMINISTIC PSDP_HOST_COLLECTIVES
out=$("$info" --algorithms) || fail "default table: exit $?"
expect_line "$out" 1 "all-reduce:0-256K=rhd" "built-in"
expect_line "$out" 3 "all-reduce:8M-=direct,fallback=ring,cma=1,stream=1" "built-in"
[[ $(grep -c "# built-in" <<<"$out") -eq $(wc -l <<<"$out") ]] || fail "default table has rules not built in: $out"

out=$(PSDP_ALGORITHM=ring PSDP_ALGORITHMS="all-gather:1M-=ring,fragment=256K,depth=8; *:0-64K=rhd,ranks=2-4" \
  "$info" --algorithms) || fail "user table: exit $?"
expect_line "$out" 1 "all-gather:1M-=ring,fragment=256K,depth=8" "PSDP_ALGORITHMS"
expect_line "$out" 2 "*:0-64K=rhd,ranks=2-4" "PSDP_ALGORITHMS"
expect_line "$out" 3 "*:0-=ring" "PSDP_ALGORITHM"
expect_line "$out" 4 "all-reduce:0-256K=rhd" "built-in"

err=$(PSDP_ALGORITHMS="all-reduce:0-64K=ring;all-reduce:0-1M=tree" "$info" --algorithms 2>&1 >/dev/null)
status=$?
[[ $status -eq 1 ]] || fail "a malformed rule exits $status, not 1"
[[ "$err" == *"PSDP_ALGORITHMS"*"rule 2"*"unknown algorithm 'tree'"* ]] || fail "error does not name the rule: $err"

out=$(PSDP_HOST_COLLECTIVES=host-ring PSDP_ALGORITHM=direct "$info" --algorithms) || fail "host-ring table: exit $?"
expect_line "$out" 1 "*:0-=ring" "provider host-ring"
[[ $(wc -l <<<"$out") -eq 1 ]] || fail "host-ring's table is not one rule: $out"

err=$(PSDP_HOST_COLLECTIVES=nccl "$info" --algorithms 2>&1 >/dev/null)
status=$?
[[ $status -eq 1 ]] || fail "an unknown provider exits $status, not 1"
[[ "$err" == *"PSDP_HOST_COLLECTIVES"*"'nccl'"*"host, host-ring"* ]] || fail "error does not name the provider: $err"

out=$("$info" --providers) || fail "--providers: exit $?"
grep -qE '^host +memory host +progress transport events' <<<"$out" || fail "no host provider line: $out"
grep -qE '^host-ring +memory host +progress transport events' <<<"$out" || fail "no host-ring provider line: $out"

if ((failures > 0)); then
  echo "$failures check(s) failed"
  exit 1
fi
echo "psdp-info --algorithms: all checks passed"
