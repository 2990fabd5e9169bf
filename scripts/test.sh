#!/usr/bin/env bash
# Builds psdp and runs the whole test suite, tier by tier, then the Python bindings' tests, printing how long
# each stage took; then fuzzes every parser of untrusted bytes; then rebuilds with AddressSanitizer and
# UndefinedBehaviorSanitizer and runs the unit and multi-rank tiers again; then runs the tests of the
# multi-threaded parts (the tsan label) under ThreadSanitizer.
#   scripts/test.sh            everything
#   PSDP_SKIP_SANITIZERS=1 scripts/test.sh   skip the sanitizer stage
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

stage() {
  local name=$1
  shift
  local start=$SECONDS
  echo "=== stage: $name"
  "$@"
  echo "=== stage: $name took $((SECONDS - start)) s"
}

# A tier is a CTest label; tests labelled "long" too run only in the long tier.
run_tier() {
  local dir=$1 label=$2
  local exclude=()
  [[ $label == long ]] || exclude=(-LE '^long$')
  ctest --test-dir "$dir" -L "^${label}\$" "${exclude[@]}" --output-on-failure --timeout 600 -j "$jobs"
}

total_start=$SECONDS
stage "build" scripts/setup.sh build
for tier in lint unit mp long install; do
  stage "test $tier" run_tier build "$tier"
done
# The Python bindings, installed with pip into a virtual environment, against build/'s libpsdp.so.
stage "python" scripts/python_tests.sh
# Every parser of untrusted bytes under libFuzzer for 30 s each (clang, ASan, UBSan; scripts/fuzz.sh).
stage "fuzz" scripts/fuzz.sh "${PSDP_FUZZ_SECONDS:-30}"
if [[ -z "${PSDP_SKIP_SANITIZERS:-}" ]]; then
  # Also the host-only configuration (PSDP_WITH_CUDA=OFF), so that it keeps building cleanly.
  stage "build asan+ubsan" scripts/setup.sh build-asan -DPSDP_SANITIZE=address,undefined -DPSDP_BUILD_BENCHMARKS=OFF \
    -DPSDP_WITH_CUDA=OFF
  # UCX keeps some allocations until exit by design; leaks in psdp's own code are still reported.
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  for tier in unit mp; do
    stage "asan+ubsan test $tier" run_tier build-asan "$tier"
  done
  # Only what the tsan label runs is built. UCX is not instrumented; UCX_MEM_EVENTS=no keeps its memory
  # hooks (libucm patches mmap and madvise in libc) out of the thread start and exit paths, where they run
  # before TSan's per-thread state exists and crash it. Any report fails the test.
  stage "build tsan" env PSDP_BUILD_TARGET=psdp_tsan_tests scripts/setup.sh build-tsan -DPSDP_SANITIZE=thread \
    -DPSDP_BUILD_BENCHMARKS=OFF -DPSDP_WITH_CUDA=OFF
  export TSAN_OPTIONS=halt_on_error=1:exitcode=66 UCX_MEM_EVENTS=no
  stage "tsan test" run_tier build-tsan tsan
fi
echo "=== all stages passed in $((SECONDS - total_start)) s"
