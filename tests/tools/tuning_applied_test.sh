#!/usr/bin/env bash
# A tuning file applied by real ranks, as a user runs them: psdp-run starts the ranks, PSDP_TUNING_FILE names
# the file. Checks that
#   - the section for this interconnect (UCX shared memory, one host, two ranks) applies on every rank, each
#     says so at info level, the debug log names the file's rule for the calls it serves, and the results
#     are right (psdp-perf counts wrong elements and exits nonzero on any);
#   - the same file is ignored on three ranks, with a line saying why (ranks per host differ);
#   - a rank without the file fails init on every rank, the mismatch naming PSDP_TUNING_FILE and the ranks;
#   - the teams a registered state splits apply it too, and its engine rule gives the step's window,
#     grouping and fragment where the step's config leaves them unset (mp_step checks every value it reduces).
#   tuning_applied_test.sh PSDP_RUN PSDP_PERF MP_STEP
set -uo pipefail
# Greps at the end of a pipe read all their input (no -q): with pipefail, a grep -q that stops early would
# fail the pipe through its writer's SIGPIPE.
run=$1 perf=$2 step=$3
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
unset PSDP_ALGORITHMS PSDP_ALGORITHM PSDP_DETERMINISTIC PSDP_HOST_COLLECTIVES PSDP_LOG_FILE
tuning=$dir/tuning
cat > "$tuning" <<'TUNING'
psdp-tuning 1
signature provider=ucx lanes=tcp hosts=2 ranks-per-host=1
all-reduce bytes=* algorithm=ring fragment=1M
signature provider=ucx lanes=cma,sysv hosts=1 ranks-per-host=2
all-reduce ranks=2 bytes=1M-4M algorithm=ring fragment=128K depth=8
reduce-scatter ranks=2 bytes=1M-4M algorithm=rhd
engine ranks=2 chunk-bytes=* window=3 grouping=2 fragment=256K
TUNING
rule="rule all-reduce:1M-4M=ring,ranks=2-2,fragment=128K,depth=8 (tuning file line 5)"
section="the section of line 4 applies to this communicator (provider=ucx lanes=cma,sysv hosts=1 ranks-per-host=2)"

out=$(PSDP_TUNING_FILE=$tuning PSDP_LOG_LEVEL=debug "$run" -n 2 --timeout 60 -- "$perf" ar -b 2M -e 2M -n 3 -w 1 2>&1)
status=$?
[[ $status -eq 0 ]] || fail "2 ranks, all-reduce: exit $status: $out"
for r in 0 1; do
  grep -F "[$r] " <<<"$out" |
    grep -F "tuning file $tuning (PSDP_TUNING_FILE): $section: 2 collective rules, 1 engine rules" > /dev/null ||
    fail "rank $r does not say the section applies"
  grep -F "[$r] " <<<"$out" | grep -F "all-reduce #" | grep -F "count 524288" |
    grep -F "8 in flight per direction, $rule" > /dev/null ||
    fail "rank $r does not log the tuned rule serving the 2 MiB all-reduce"
done

out=$(PSDP_TUNING_FILE=$tuning PSDP_LOG_LEVEL=debug "$run" -n 2 --timeout 60 -- "$perf" rs -b 2M -e 2M -n 3 -w 1 2>&1)
status=$?
[[ $status -eq 0 ]] || fail "2 ranks, reduce-scatter: exit $status: $out"
grep -F "reduce-scatter #" <<<"$out" | grep -F "count 262144" | grep -F "recursive halving over 2 ranks" > /dev/null ||
  fail "the tuned rhd rule does not serve the 2 MiB reduce-scatter: $(grep -F 'reduce-scatter #' <<<"$out" | tail -2)"

out=$(PSDP_TUNING_FILE=$tuning PSDP_LOG_LEVEL=debug "$run" -n 3 --timeout 60 -- "$perf" ar -b 2M -e 2M -n 2 -w 1 2>&1)
status=$?
[[ $status -eq 0 ]] || fail "3 ranks: exit $status: $out"
grep -qF "does not apply to this communicator (provider=ucx lanes=cma,sysv hosts=1 ranks-per-host=3): no section \
covers this job: line 2: lanes are cma,sysv here, tcp in the file; line 4: ranks per host are 3 here, 2 in the file" \
  <<<"$out" || fail "3 ranks: no line says why the file does not apply: $(grep -F tuning <<<"$out" | head -3)"
grep -qF "(tuning file line" <<<"$out" && fail "3 ranks: a tuned rule served a call"

# Rank 1 loads no tuning file: every rank fails init, and the message names the setting and both sides.
out=$(PSDP_TUNING_FILE=$tuning "$run" -n 2 --timeout 60 --keep-going -- \
  sh -c 'if [ "$PSDP_RANK" = 1 ]; then export PSDP_TUNING_FILE=none; fi; exec "$0" "$@"' \
  "$perf" ar -b 1M -e 1M -n 1 -w 0 2>&1)
status=$?
[[ $status -ne 0 ]] || fail "a rank without the tuning file: exit 0"
for r in 0 1; do
  grep -F "[$r] " <<<"$out" | grep -F "PSDP_TUNING_FILE" | grep -F "rank 1 has no tuning file" |
    grep -F "a tuning file whose rules hash to" > /dev/null || fail "rank $r does not name the mismatch: $out"
done

# A registered state's teams (group of 2 over 2 ranks, and replicas of 1) and its step's engine rule.
out=$(PSDP_TUNING_FILE=$tuning PSDP_LOG_LEVEL=info "$run" -n 2 --timeout 60 -- "$step" --window 0 --steps 2 2>&1)
status=$?
[[ $status -eq 0 ]] || fail "mp_step with the tuned engine rule: exit $status: $out"
grep -qF "tuning file $tuning (PSDP_TUNING_FILE) line 7: steps of this state take window 3, grouping 2 and \
fragment 262144" <<<"$out" || fail "no line says the engine rule applies: $(grep -F tuning <<<"$out" | head -4)"
# The rule's fragment serves the step's ring transfers (deterministic mode runs every collective as the ring;
# without the rule their fragments would be PSDP_FRAGMENT_BYTES's 1M, 262144 elements).
out=$(PSDP_TUNING_FILE=$tuning PSDP_DETERMINISTIC=1 PSDP_LOG_LEVEL=debug "$run" -n 2 --timeout 60 -- \
  "$step" --window 0 --steps 2 --scale 65 --chunk-bytes 1048576 2>&1)
status=$?
[[ $status -eq 0 ]] || fail "mp_step with the engine rule's fragment: exit $status: $(tail -5 <<<"$out")"
grep -F "reduce-scatter #" <<<"$out" | grep -F "count 262144" | grep -F "fragments of 65536 elements" > /dev/null ||
  fail "the engine rule's 256K fragment does not serve the step's reduce-scatters: \
$(grep -F 'reduce-scatter #' <<<"$out" | tail -2)"

if ((failures > 0)); then
  echo "$failures check(s) failed"
  exit 1
fi
echo "tuning file applied: all checks passed"
