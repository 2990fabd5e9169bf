#!/usr/bin/env bash
# psdp-tune on 2 ranks, a short sweep (--quick, 64K to 4M, 2 repetitions): it must write a tuning file for
# this interconnect that the library reads (psdp-info --algorithms --signature shows its rules), that
# communicators apply (each rank logs the section) and with which psdp-perf gets every element right; and
# its JSON must draw as a PNG heatmap (with Debian's python3 and python3-matplotlib; said and skipped where
# they are missing). Then the engine sweep on a small model-shaped state (--model, 2% of Qwen2.5-0.5B, two
# chunk sizes, one repetition): a table per chunk size, the engine's JSON; an engine rule that psdp-perf step
# applies where its windows and grouping are left to the file, and that psdp-tune --verify measures. Last,
# online tuning in psdp-perf step, whose choice it writes as a tuning file the library reads.
#   tune_run_test.sh PSDP_RUN PSDP_TUNE PSDP_PERF PSDP_INFO TUNE_HEATMAP_PY MODEL_JSON
set -uo pipefail
run=$1 tune=$2 perf=$3 info=$4 heatmap=$5 model=$6
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
unset PSDP_ALGORITHMS PSDP_ALGORITHM PSDP_DETERMINISTIC PSDP_HOST_COLLECTIVES PSDP_TUNING_FILE

# Bad command lines exit 2 naming the option, before any communicator.
expect_usage_error() {
  local words=$1
  shift
  local err
  err=$("$tune" "$@" 2>&1 >/dev/null)
  local status=$?
  [[ $status -eq 2 ]] || fail "psdp-tune $*: exit $status, want 2"
  grep -F -- "$words" <<<"$err" > /dev/null || fail "psdp-tune $*: no '$words' in: $err"
}
expect_usage_error "add --model FILE" --scale 0.5
expect_usage_error "nothing to sweep without --model" --ops none
expect_usage_error "--chunk-bytes: '4Q' is not a size" --model default --chunk-bytes 1M,4Q
expect_usage_error "--scale: expected a number in (0, 1]" --model default --scale 2
expect_usage_error "--against REF: with --verify FILE" --against /dev/null
expect_usage_error "--against compares collective rules: no --model" --verify a --against b --model default

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

# The acceptance run: the quick sweep's file against a reference file and the built-in rules, all three in
# fresh interleaved runs. The reference here is the same file, so the verdict is left to the noise of two
# repetitions; the table, the verdict line and an exit of 0 or 4 are what must come out.
out=$("$run" -n 2 --timeout 180 -- "$tune" --verify "$dir/tuning" --against "$dir/tuning" -b 1M -e 16M -f 4 -r 2 \
  --point-seconds 0.005 2>&1)
status=$?
echo "$out"
[[ $status -eq 0 || $status -eq 4 ]] || fail "psdp-tune --verify --against exited $status"
grep -F "[0] # all-reduce, 2 ranks: median busbw (GB/s); time ratios, ! beyond the bound" <<<"$out" > /dev/null ||
  fail "psdp-tune --verify --against: no acceptance table"
grep -E "^\[0\] # .*tuning against .*tuning: at worst [0-9.]+x its time from 16M up \(16777216 bytes of [a-z-]+\)" \
  <<<"$out" > /dev/null || fail "psdp-tune --verify --against: no verdict"

engine_args=(--ops none --model "$model" --scale 0.02 --chunk-bytes 256K,1M -r 1)
out=$("$run" -n 2 --timeout 180 -- "$tune" --quick "${engine_args[@]}" -o "$dir/engine" --json "$dir/engine.json" 2>&1)
status=$?
echo "$out"
[[ $status -eq 0 ]] || fail "psdp-tune --model exited $status"
for chunks in 256K 1M; do
  grep -F "[0] # engine, 2 ranks, plan chunks of $chunks (" <<<"$out" > /dev/null || fail "no engine table at $chunks"
done
grep -F '"chunk_bytes": 262144' "$dir/engine.json" > /dev/null || fail "the JSON has no engine sweep at 256K"
grep -F "all-reduce, 2 ranks" <<<"$out" > /dev/null && fail "--ops none swept the collectives"

# A rule for the 256K chunks (window 3 and grouping 2, which no sweep tries): psdp-perf step takes it where
# its config leaves the settings to the file, and psdp-tune --verify measures it against the built-in.
{
  echo "psdp-tuning 1"
  echo "signature $signature"
  echo "engine ranks=2 chunk-bytes=256K-512K window=3 grouping=2"
} > "$dir/engine-rule"
out=$(PSDP_TUNING_FILE=$dir/engine-rule PSDP_LOG_LEVEL=info "$run" -n 2 --timeout 120 -- "$perf" step --model "$model" \
  --scale 0.02 --chunk-bytes 256K --window 0 --grouping 0 --iters 1 --warmup 0 --mode pipelined 2>&1)
status=$?
[[ $status -eq 0 ]] || fail "psdp-perf step with the engine rule: exit $status: $out"
grep -F "line 3: steps of this state take window 3, grouping 2 and fragment 0" <<<"$out" > /dev/null ||
  fail "psdp-perf step: the engine rule does not apply: $out"
out=$("$run" -n 2 --timeout 180 -- "$tune" --verify "$dir/engine-rule" "${engine_args[@]}" 2>&1)
status=$?
echo "$out"
# 4: slower than the built-in beyond the noise, which one repetition may well say; anything else fails.
[[ $status -eq 0 || $status -eq 4 ]] || fail "psdp-tune --verify of an engine rule exited $status"
grep -F "window 2 x1 (built-in)" <<<"$out" > /dev/null && grep -F "tuned" <<<"$out" > /dev/null ||
  fail "psdp-tune --verify: no built-in and tuned rows"
grep -F "against the built-in rules: at worst" <<<"$out" > /dev/null || fail "psdp-tune --verify: no verdict"

# Online tuning: psdp-perf step --online runs steps until the engine keeps a choice, and writes it as a
# tuning file that the library reads (psdp-info shows its engine rule).
out=$("$run" -n 2 --timeout 180 -- "$perf" step --model "$model" --scale 0.02 --chunk-bytes 256K --online \
  --online-out "$dir/online" --iters 1 --mode pipelined 2>&1)
status=$?
[[ $status -eq 0 ]] || fail "psdp-perf step --online exited $status: $out"
grep -E "^\[0\] # online tuning kept window [1248] x[0-9]+ fragment (own|[0-9]+K|[0-9]+M) after [0-9]+ steps" \
  <<<"$out" > /dev/null || fail "psdp-perf step --online: no choice kept: $out"
grep -E "^engine ranks=2 chunk-bytes=256K-512K window=[1248] grouping=[0-9]+( fragment=[0-9]+[KM])?$" \
  "$dir/online" > /dev/null ||
  fail "psdp-perf step --online-out: $(cat "$dir/online")"
table=$(PSDP_TUNING_FILE=$dir/online "$info" --algorithms --signature "$signature") || fail "psdp-info: exit $?"
grep -E "# engine ranks=2 chunk-bytes=256K-512K window=" <<<"$table" > /dev/null ||
  fail "psdp-info does not show the online choice's rule: $table"

if ((failures > 0)); then
  echo "$failures check(s) failed"
  exit 1
fi
echo "psdp-tune: all checks passed"
