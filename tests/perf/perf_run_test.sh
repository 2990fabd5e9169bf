#!/usr/bin/env bash
# Runs psdp-perf and checks what a user relies on: exit status, the #wrong columns, the closing lines and
# the JSON file.  usage: perf_run_test.sh {cli|ar|rs|ag|all} PSDP_RUN PSDP_PERF
set -uo pipefail
mode=$1 run=$2 perf=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# expect_usage_error ARGS...: exit status 2 and a message naming the problem on stderr, nothing else run.
expect_usage_error() {
  local pattern=$1
  shift
  "$perf" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [[ $rc -eq 2 ]] || fail "psdp-perf $* exited $rc, expected 2"
  grep -q -- "$pattern" "$tmp/err" || fail "psdp-perf $*: stderr lacks '$pattern': $(head -c 300 "$tmp/err")"
}

# check_table FILE: every data row has #wrong 0 twice, and the closing lines say so.
check_table() {
  local file=$1 rows
  rows=$(grep -E '^\[0\] +[0-9]+ ' "$file" | wc -l)
  [[ $rows -gt 0 ]] || fail "no result rows in $(cat "$file")"
  # Columns after the "[0]" prefix: size count type redop root time algbw busbw #wrong time algbw busbw #wrong.
  awk '/^\[0\] +[0-9]+ / { if ($10 != "0" || $14 != "0") { print; bad = 1 } } END { exit bad }' "$file" ||
    fail "rows with wrong elements (above)"
  grep -q '# Out of bounds values : 0 OK' "$file" || fail "no '# Out of bounds values : 0 OK' line"
  grep -q '# Avg bus bandwidth' "$file" || fail "no '# Avg bus bandwidth' line"
}

case $mode in
  cli)
    expect_usage_error "unknown collective 'gatherv'" gatherv
    expect_usage_error "-b: expected a size" ar -b 12Q
    expect_usage_error "-b: expected a size" ar -b -5
    expect_usage_error "-e: expected a size" ar -e ''
    expect_usage_error "-b is larger than -e" ar -b 2M -e 1M
    expect_usage_error "-f: the factor must be an integer >= 2" ar -f 1
    expect_usage_error "-n: iterations must be" ar -n 0
    expect_usage_error "-c: expected 0 or 1" ar -c 2
    expect_usage_error "-R: expected 0 or 1" ar -R 2
    expect_usage_error "-d: unknown datatype" ar -d float8
    expect_usage_error "-o: unknown op" ar -o xor
    expect_usage_error "option -J needs a value" ar -J
    expect_usage_error "unknown option -q" ar -q
    expect_usage_error "--min_busbw: expected a bandwidth in GB/s above 0" ar --min_busbw 0
    expect_usage_error "--min_busbw: expected a bandwidth in GB/s above 0" ar --min_busbw 2GB
    expect_usage_error "only 1 is accepted" all_reduce_perf -g 2
    expect_usage_error "unexpected argument 'extra'" ar extra
    expect_usage_error "cannot open /nonexistent.json" step --model /nonexistent.json
    expect_usage_error "no model 'Qwen9' in the file" step --name Qwen9
    expect_usage_error "--window: expected a count" step --window many
    expect_usage_error "--online-out: only with --online" step --online-out t
    expect_usage_error "--bulk-plan: expected whole or chunked" step --bulk-plan some
    "$perf" --help >"$tmp/out" 2>&1 || fail "--help exited non-zero"
    grep -q 'usage: psdp-perf' "$tmp/out" || fail "--help prints no usage"
    "$perf" step --help >"$tmp/out" 2>&1 || fail "step --help exited non-zero"
    grep -q 'usage: psdp-perf step' "$tmp/out" || fail "step --help prints no usage"
    ;;
  ar | rs | ag)
    # Private buffers, then psdp_mem_alloc ones (-R 1: the 1M rows run the direct algorithm).
    for shared in 0 1; do
      "$run" -n 2 --timeout 150 -- "$perf" "$mode" -b 4K -e 1M -f 4 -w 1 -n 2 -c 1 -R $shared -J "$tmp/r.json" \
        >"$tmp/out" 2>&1
      rc=$?
      cat "$tmp/out"
      [[ $rc -eq 0 ]] || fail "psdp-perf $mode -R $shared exited $rc"
      check_table "$tmp/out"
      python3 - "$tmp/r.json" "$mode" <<'PY' || fail "JSON check (-R $shared)"
import json, sys
d = json.load(open(sys.argv[1]))
names = {"ar": "all_reduce", "rs": "reduce_scatter", "ag": "all_gather"}
assert d["collective"] == names[sys.argv[2]], d["collective"]
assert d["nranks"] == 2 and len(d["results"]) == 5, d
for r in d["results"]:
    for k in ("out_of_place", "in_place"):
        assert r[k]["wrong"] == 0 and r[k]["time_us"] > 0 and r[k]["busbw"] > 0, r
PY
    done
    # Eight calls in flight per iteration (-m), each on its own slice of the buffers.
    "$run" -n 2 --timeout 150 -- "$perf" "$mode" -b 64K -e 1M -f 4 -w 1 -n 2 -c 1 -m 8 -J "$tmp/m.json" >"$tmp/out" 2>&1
    rc=$?
    cat "$tmp/out"
    [[ $rc -eq 0 ]] || fail "psdp-perf $mode -m 8 exited $rc"
    check_table "$tmp/out"
    grep -q "8 in flight" "$tmp/out" || fail "-m 8: the header does not say 8 in flight"
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["agg_iters"] == 8, d' "$tmp/m.json" ||
      fail "-m 8: JSON agg_iters"
    # The regression gate: a bandwidth no run reaches fails every row with exit 4 (results still right), one
    # every run reaches passes.
    if [[ $mode == ar ]]; then
      "$run" -n 2 --timeout 150 -- "$perf" ar -b 64K -e 1M -f 4 -w 1 -n 2 --min_busbw 1000000 -J "$tmp/g.json" \
        >"$tmp/out" 2>&1
      rc=$?
      cat "$tmp/out"
      [[ $rc -eq 4 ]] || fail "--min_busbw 1000000 exited $rc, expected 4"
      check_table "$tmp/out"
      grep -q '# Below --min_busbw 1e+06 : 6 FAILED' "$tmp/out" || fail "--min_busbw 1000000: no '6 FAILED' line"
      python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert len(d["below_min_busbw"]) == 6, d' \
        "$tmp/g.json" || fail "--min_busbw: JSON below_min_busbw"
      "$run" -n 2 --timeout 150 -- "$perf" ar -b 64K -e 1M -f 4 -w 1 -n 2 --min_busbw 0.000001 >"$tmp/out" 2>&1
      rc=$?
      [[ $rc -eq 0 ]] || fail "--min_busbw 0.000001 exited $rc, expected 0"
      grep -q '# Below --min_busbw 1e-06 : 0 OK' "$tmp/out" || fail "--min_busbw 0.000001: no '0 OK' line"
    fi
    ;;
  all)
    # Exit 0: everything ran and verified. Exit 3: some combination is unsupported by this build, and each such
    # combination must be named, with the reason, on a "# ... unsupported by this build of psdp" line.
    for coll in ar rs ag bcast; do
      "$run" -n 2 --timeout 250 -- "$perf" "$coll" -b 1K -e 64K -f 8 -w 1 -n 1 -c 1 -d all -o all \
        -J "$tmp/$coll.json" >"$tmp/out" 2>&1
      rc=$?
      cat "$tmp/out"
      [[ $rc -eq 0 || $rc -eq 3 ]] || fail "psdp-perf $coll -d all -o all exited $rc"
      python3 - "$tmp/$coll.json" "$coll" "$rc" <<'PY' || fail "JSON check of $coll"
import json, sys
d = json.load(open(sys.argv[1]))
coll, rc = sys.argv[2], int(sys.argv[3])
combos = 10 * (6 if coll in ("ar", "rs") else 1)
sizes = {(r["type"], r["redop"]) for r in d["results"]}
assert len(sizes) + len(d["unsupported"]) == combos, (len(sizes), len(d["unsupported"]), combos)
assert (rc == 3) == bool(d["unsupported"]), (rc, d["unsupported"])
for u in d["unsupported"]:
    assert "unsupported by this build of psdp: " in u and not u.endswith(": "), u
for r in d["results"]:
    assert r["out_of_place"]["wrong"] == 0 and r["in_place"]["wrong"] == 0, r
PY
      if [[ $rc -eq 3 ]]; then
        grep -q 'unsupported by this build of psdp' "$tmp/out" || fail "exit 3 without an 'unsupported' line"
      fi
      if grep -qE '^\[0\] +[0-9]+ ' "$tmp/out"; then check_table "$tmp/out"; fi
    done
    ;;
  more)
    # The other collectives at 3 ranks, root 2, every dtype (and every op of the reduce), two calls in flight:
    # every element right; all-to-all and send/recv have no in-place columns.
    for coll in reduce gather scatter a2a sendrecv; do
      ops=sum
      [[ $coll == reduce ]] && ops=all
      "$run" -n 3 --timeout 250 -- "$perf" "$coll" -b 1K -e 256K -f 16 -w 1 -n 2 -c 1 -r 2 -m 2 -d all -o $ops \
        -J "$tmp/$coll.json" >"$tmp/out" 2>&1
      rc=$?
      cat "$tmp/out"
      [[ $rc -eq 0 || $rc -eq 3 ]] || fail "psdp-perf $coll exited $rc"
      python3 - "$tmp/$coll.json" "$coll" <<'PY' || fail "JSON check of $coll"
import json, sys
d = json.load(open(sys.argv[1]))
coll = sys.argv[2]
names = {"reduce": "reduce", "gather": "gather", "scatter": "scatter", "a2a": "alltoall", "sendrecv": "sendrecv"}
assert d["collective"] == names[coll] and d["nranks"] == 3, d
assert len(d["results"]) >= 10 * 3, len(d["results"])
for r in d["results"]:
    assert r["out_of_place"]["wrong"] == 0 and r["out_of_place"]["time_us"] > 0, r
    if coll in ("a2a", "sendrecv"):
        assert r["in_place"]["time_us"] == 0, r
    else:
        assert r["in_place"]["wrong"] == 0 and r["in_place"]["time_us"] > 0, r
PY
      if [[ $coll == a2a || $coll == sendrecv ]]; then
        grep -qE '^\[0\] +[0-9]+ .* N/A +N/A +N/A +N/A$' "$tmp/out" || fail "$coll: in-place columns not N/A"
      else
        check_table "$tmp/out"
      fi
    done
    ;;
  *)
    echo "usage: $0 {cli|ar|rs|ag|all|more} PSDP_RUN PSDP_PERF" >&2
    exit 2
    ;;
esac
[[ $failures -eq 0 ]] || { echo "$failures check(s) failed" >&2; exit 1; }
echo "all checks passed"
