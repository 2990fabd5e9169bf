#!/usr/bin/env bash
# The built-in rules follow the interconnect a communicator finds, as a user runs it (psdp-run, psdp-perf on
# private buffers). Checks that
#   - with the progress thread, UCX reads large ring messages once (its CMA rendezvous, lanes cma,sysv): a
#     1 MiB reduce-scatter keeps the ring (rule cma=0, "falling back");
#   - under caller progress UCX has no such rendezvous (lanes sysv): the same call runs direct, reading the
#     peer with CMA (rule cma=1, "ran direct"), and the results are right (psdp-perf counts wrong elements
#     and exits nonzero on any); psdp-info shows that rule for caller progress;
#   - ranks that set PSDP_PROGRESS differently fail init on every rank, the mismatch naming the setting and
#     both ranks, before their transports connect (UCX aborts a process whose lanes to a peer disagree).
#   interconnect_rules_test.sh PSDP_RUN PSDP_PERF PSDP_INFO
set -uo pipefail
# Greps at the end of a pipe read all their input (no -q): with pipefail, a grep -q that stops early would
# fail the pipe through its writer's SIGPIPE.
run=$1 perf=$2 info=$3
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
unset PSDP_ALGORITHMS PSDP_ALGORITHM PSDP_DETERMINISTIC PSDP_HOST_COLLECTIVES PSDP_LOG_FILE UCX_TLS
export PSDP_TUNING_FILE=none
middle='reduce-scatter:256K-8M=direct,fallback=ring'

# The 1 MiB reduce-scatters of a run (#0-#1 are psdp-perf's small setup calls) as the debug log of rank 0
# tells them.
calls() {
  grep -F "[0] " <<<"$1" | grep -E "reduce-scatter #[0-9]+ \(count 131072" | sed 's/^.*\] //'
}

for progress in thread caller; do
  out=$(PSDP_PROGRESS=$progress PSDP_LOG_LEVEL=debug "$run" -n 2 --timeout 60 -- "$perf" rs -b 1M -e 1M -n 20 \
    -w 2 -c 1 2>&1)
  status=$?
  [[ $status -eq 0 ]] || fail "$progress: exit $status: $(tail -5 <<<"$out")"
  if [[ $progress == thread ]]; then
    grep -F "[0] " <<<"$out" | grep -F "this host: cma,sysv;" | grep -F "are copied once" > /dev/null ||
      fail "thread: no line says the ring copies once: $(grep -F "this host" <<<"$out")"
    calls "$out" | grep -F "rule $middle,cma=0" > /dev/null || fail "thread: no call served by cma=0: $(calls "$out" | head -2)"
    calls "$out" | grep -F "ran direct" > /dev/null && fail "thread: a 1 MiB reduce-scatter ran direct"
  else
    grep -F "[0] " <<<"$out" | grep -F "this host: sysv;" | grep -F "pass through shared memory in pieces" > /dev/null ||
      fail "caller: no line says the ring copies through shared memory: $(grep -F "this host" <<<"$out")"
    calls "$out" | grep -F "rule $middle,cma=1" > /dev/null || fail "caller: no call served by cma=1: $(calls "$out" | head -2)"
    # The first calls learn whether the peer can be read; the timed ones run direct.
    ran=$(calls "$out" | grep -cF "ran direct")
    ((ran >= 20)) || fail "caller: $ran of the 1 MiB reduce-scatters ran direct, expected the 20 timed ones at least"
  fi
done

table=$(PSDP_PROGRESS=caller "$info" --algorithms 2>&1)
grep -F "$middle,cma=1" <<<"$table" > /dev/null || fail "psdp-info under caller progress: $table"
table=$(PSDP_PROGRESS=thread "$info" --algorithms 2>&1)
grep -F "$middle,cma=0" <<<"$table" > /dev/null || fail "psdp-info with the progress thread: $table"

# Rank 1 under caller progress, rank 0 with the thread: every rank fails init, naming both.
out=$("$run" -n 2 --timeout 60 --keep-going -- \
  sh -c 'if [ "$PSDP_RANK" = 1 ]; then export PSDP_PROGRESS=caller; else export PSDP_PROGRESS=thread; fi
         exec "$0" "$@"' "$perf" ar -b 1M -e 1M -n 1 -w 0 2>&1)
status=$?
[[ $status -ne 0 ]] || fail "mixed progress modes: exit 0"
for r in 0 1; do
  grep -F "[$r] " <<<"$out" | grep -F "PSDP_PROGRESS differs between ranks: rank 0 has thread, rank 1 has caller" \
    > /dev/null || fail "rank $r does not name the mismatch: $out"
done
grep -F "Fatal" <<<"$out" > /dev/null && fail "mixed progress modes reached UCX's wire-up: $out"

if ((failures > 0)); then
  echo "$failures check(s) failed"
  exit 1
fi
echo "interconnect rules: thread and caller progress each get their rule, mixed modes refused at init"
