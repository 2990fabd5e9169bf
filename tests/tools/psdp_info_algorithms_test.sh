#!/usr/bin/env bash
# psdp-info --algorithms prints the table in force: the built-in rules by default, the rules of
# PSDP_ALGORITHMS first and those of PSDP_ALGORITHM next, each line parseable and labelled with its origin,
# or the host-ring provider's one ring rule whatever they say; a malformed rule or an unknown provider makes
# it exit 1 naming it. Its first line says which tuning file is loaded; with --signature the rules of the
# file's section for that interconnect come after PSDP_ALGORITHM's, and a malformed file or signature exits 1
# naming the line and column. psdp-info --providers lists both host providers.
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
# A tuning file on this machine's search path would add its rules: none here.
export PSDP_TUNING_FILE=none
out=$("$info" --algorithms) || fail "default table: exit $?"
[[ $(sed -n 1p <<<"$out") == "# no tuning file" ]] || fail "line 1 is not '# no tuning file': $out"
expect_line "$out" 2 "all-reduce:0-256K=rhd" "built-in"
expect_line "$out" 4 "all-reduce:8M-=direct,fallback=ring,cma=1,stream=1" "built-in"
[[ $(grep -c "# built-in" <<<"$out") -eq $(($(wc -l <<<"$out") - 1)) ]] ||
  fail "default table has rules not built in: $out"

out=$(PSDP_ALGORITHM=ring PSDP_ALGORITHMS="all-gather:1M-=ring,fragment=256K,depth=8; *:0-64K=rhd,ranks=2-4" \
  "$info" --algorithms) || fail "user table: exit $?"
expect_line "$out" 2 "all-gather:1M-=ring,fragment=256K,depth=8" "PSDP_ALGORITHMS"
expect_line "$out" 3 "*:0-64K=rhd,ranks=2-4" "PSDP_ALGORITHMS"
expect_line "$out" 4 "*:0-=ring" "PSDP_ALGORITHM"
expect_line "$out" 5 "all-reduce:0-256K=rhd" "built-in"

tuning=$(mktemp)
trap 'rm -f "$tuning"' EXIT
cat > "$tuning" <<'TUNING'
psdp-tuning 1
signature provider=ucx lanes=tcp hosts=2 ranks-per-host=*
all-reduce bytes=* algorithm=ring fragment=1M
signature provider=ucx lanes=cma,sysv hosts=1 ranks-per-host=*
all-reduce ranks=2-4 bytes=1M-16M algorithm=ring fragment=256K depth=8  # measured
engine chunk-bytes=* window=4
TUNING
shm="provider=ucx lanes=cma,sysv hosts=1 ranks-per-host=2"
out=$(PSDP_TUNING_FILE=$tuning PSDP_ALGORITHM=ring "$info" --algorithms --signature "$shm") ||
  fail "tuned table: exit $?"
[[ $(sed -n 1p <<<"$out") == "# tuning file $tuning (PSDP_TUNING_FILE): the section of line 4 covers $shm" ]] ||
  fail "line 1 does not name the section: $out"
expect_line "$out" 2 "*:0-=ring" "PSDP_ALGORITHM"
expect_line "$out" 3 "all-reduce:1M-16M=ring,ranks=2-4,fragment=256K,depth=8" "tuning file line 5"
expect_line "$out" 4 "all-reduce:0-256K=rhd" "built-in"
grep -qx "# engine ranks=\* chunk-bytes=\* window=4 *# tuning file line 6" <<<"$out" || fail "no engine rule: $out"
out=$(PSDP_TUNING_FILE=$tuning "$info" --algorithms) || fail "tuned table without a signature: exit $?"
[[ $(sed -n 1p <<<"$out") == *"line 2: provider=ucx lanes=tcp hosts=2 ranks-per-host=*; line 4: "* ]] ||
  fail "line 1 does not list the sections: $out"
[[ $(grep -c "tuning file line" <<<"$out") -eq 0 ]] || fail "tuned rules without a signature: $out"
out=$(PSDP_TUNING_FILE=$tuning "$info" --algorithms --signature "provider=ucx lanes=rc hosts=4 ranks-per-host=8") ||
  fail "uncovered signature: exit $?"
[[ $(sed -n 1p <<<"$out") == *"does not apply to"*"line 4: lanes are rc here, cma,sysv in the file" ]] ||
  fail "line 1 does not say why no section applies: $out"

printf 'psdp-tuning 1\nsignature provider=ucx lanes=tcp hosts=2 ranks-per-host=1\nall-reduce algorithm=tree\n' \
  > "$tuning"
err=$(PSDP_TUNING_FILE=$tuning "$info" --algorithms 2>&1 >/dev/null)
status=$?
[[ $status -eq 1 ]] || fail "a malformed tuning file exits $status, not 1"
[[ "$err" == *"PSDP_TUNING_FILE"*"$tuning:3:22: algorithm: 'tree' is not one of ring, rhd, direct"* ]] ||
  fail "error does not name the line and column: $err"
err=$(PSDP_TUNING_FILE=/nonexistent/tuning "$info" --algorithms 2>&1 >/dev/null)
[[ $? -eq 1 && "$err" == *"/nonexistent/tuning"* ]] || fail "a missing tuning file is not named: $err"

err=$(PSDP_ALGORITHMS="all-reduce:0-64K=ring;all-reduce:0-1M=tree" "$info" --algorithms 2>&1 >/dev/null)
status=$?
[[ $status -eq 1 ]] || fail "a malformed rule exits $status, not 1"
[[ "$err" == *"PSDP_ALGORITHMS"*"rule 2"*"unknown algorithm 'tree'"* ]] || fail "error does not name the rule: $err"

out=$(PSDP_HOST_COLLECTIVES=host-ring PSDP_ALGORITHM=direct "$info" --algorithms) || fail "host-ring table: exit $?"
expect_line "$out" 2 "*:0-=ring" "provider host-ring"
[[ $(wc -l <<<"$out") -eq 2 ]] || fail "host-ring's table is not one rule: $out"

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
