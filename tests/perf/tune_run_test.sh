#!/usr/bin/env bash
# psdp-tune on 2 ranks, a short sweep (--quick, 64K to 4M, 2 repetitions): it must write a tuning file for
# this interconnect that the library reads (psdp-info --algorithms --signature shows its rules), that
# communicators apply (each rank logs the section) and with which psdp-perf gets every element right; and
# its JSON must draw as a PNG heatmap (with Debian's python3 and python3-matplotlib; said and skipped where
# they are missing).
#   tune_run_test.sh PSDP_RUN PSDP_TUNE PSDP_PERF PSDP_INFO TUNE_HEATMAP_PY
set -uo pipefail
run=$1 tune=$2 perf=$3 info=$4 heatmap=$5
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
unset PSDP_ALGORITHMS PSDP_ALGORITHM PSDP_DETERMINISTIC PSDP_HOST_COLLECTIVES PSDP_TUNING_FILE

out=$("$run" -n 2 --timeout 180 -- "$tune" --quick -b 64K -e 4M -r 2 --point-seconds 0.005 -o "$dir/tuning" \
  --json "$dir/sweep.json" 2>&1)
status=$?
echo "$out"
[[ $status -eq 0 ]] || fail "psdp-tune exited $status"
[[ -s "$dir/tuning" ]] || fail "no tuning file written"
grep -F "[0] # all-gather, 2 ranks: median busbw" <<<"$out" > /dev/null || fail "no all-gather table"
signature=$(sed -n 's/^signature //p' "$dir/tuning")
[[ $signature == "provider=ucx lanes="*" hosts=1 ranks-per-host=2" ]] || fail "signature line is '$signature'"
cat "$dir/tuning"

table=$(PSDP_TUNING_FILE=$dir/tuning "$info" --algorithms --signature "$signature") || fail "psdp-info: exit $?"
[[ $(sed -n 1p <<<"$table") == *"the section of line 5 covers $signature" ]] || fail "psdp-info: $table"
rules=$(grep -c "^[a-z-]* ranks=2 bytes=" "$dir/tuning")
[[ $(grep -c "# tuning file line" <<<"$table") -eq $rules ]] || fail "psdp-info shows not the file's $rules rules"

for op in ar rs ag; do
  out=$(PSDP_TUNING_FILE=$dir/tuning PSDP_LOG_LEVEL=info "$run" -n 2 --timeout 120 -- "$perf" $op -b 64K -e 8M \
    -f 2 -n 2 -w 1 -c 1 -H 0 2>&1)
  status=$?
  [[ $status -eq 0 ]] || fail "psdp-perf $op with the tuning file: exit $status: $out"
  grep -F "the section of line 5 applies to this communicator" <<<"$out" > /dev/null ||
    fail "psdp-perf $op: the section does not apply"
done

if /usr/bin/python3 -c "import matplotlib" 2> /dev/null; then
  /usr/bin/python3 "$heatmap" "$dir/sweep.json" "$dir/sweep.png" || fail "heatmap: exit $?"
  [[ $(head -c 8 "$dir/sweep.png" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] || fail "heatmap: not a PNG"
else
  echo "SKIPPED heatmap: Debian's python3 with python3-matplotlib is not installed (scripts/setup.sh installs it)"
fi

if ((failures > 0)); then
  echo "$failures check(s) failed"
  exit 1
fi
echo "psdp-tune: all checks passed"
