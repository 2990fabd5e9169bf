#!/usr/bin/env bash
# Builds the libFuzzer programs of tests/fuzz with clang, AddressSanitizer and UndefinedBehaviorSanitizer
# (in build-fuzz), then fuzzes each target for SECONDS (default 30) starting from its seed corpus, and
# prints a table of executions and corpus sizes. New corpus entries go to a scratch directory, never into
# the repository; a crash or a violated property leaves its input in build-fuzz/artifacts and fails the
# run: add that input to tests/fuzz/regressions/<target>/ with the fix, so that every build replays it.
#   scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
shift || true
build=build-fuzz

CC=clang CXX=clang++ PSDP_BUILD_TARGET=psdp_fuzzers scripts/setup.sh "$build" -DPSDP_FUZZ=ON \
  -DPSDP_SANITIZE=address,undefined -DPSDP_WITH_CUDA=OFF -DPSDP_BUILD_BENCHMARKS=OFF

# Leaks inside hwloc's XML import are hwloc's (tests/fuzz/lsan.supp says which); every other leak fails.
export LSAN_OPTIONS=suppressions=$PWD/tests/fuzz/lsan.supp
artifacts=$build/artifacts
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$artifacts"
failed=0
printf '%-24s %8s %12s %10s %10s\n' target seconds executions seeds corpus
while read -r name program seeds; do
  [[ -n $name ]] || continue
  if (($#)) && [[ " $* " != *" $name "* ]]; then continue; fi
  corpus=$scratch/$name
  mkdir -p "$corpus"
  log=$build/$name.log
  seed_count=0
  for dir in $seeds; do seed_count=$((seed_count + $(find "$dir" -type f | wc -l))); done
  # -timeout: an input that takes 10 s is a hang; -rss_limit_mb: one that takes 2 GiB is a memory bomb.
  # A fixed seed: a failure reproduces with the same command (PSDP_FUZZ_SEED=0 draws one).
  if ! "$program" -seed="${PSDP_FUZZ_SEED:-1}" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$artifacts/$name-" "$corpus" $seeds >"$log" 2>&1; then
    failed=1
    echo "=== $name failed; its input is in $artifacts, the end of its log ($log):"
    tail -40 "$log"
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  final=$(find "$corpus" -type f | wc -l)
  printf '%-24s %8s %12s %10s %10s\n' "$name" "$seconds" "${runs:-?}" "$seed_count" "$((seed_count + final))"
done <"$build/fuzz_targets.txt"
exit "$failed"
