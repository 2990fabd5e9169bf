#!/usr/bin/env bash
# perf/compare as a user runs it, with psdp alone (CI has none of the peers): run_compare.sh --load both over
# a short range must print psdp's quiet and loaded tables, its loaded/quiet ratios, the kernel-copy bound and
# the timed iterations of each size (--bytes-per-size), draw the plot where Debian's python3 has matplotlib
# (said and skipped where not), and leave no spinning shell loop behind; a --ucc-prefix with no UCC installed
# must be left out, saying why; build_ucc.sh must refuse a directory that is not a UCC source tree, naming it.
#   compare_run_test.sh REPO BUILD_DIR
set -uo pipefail
repo=$1 build=$2
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
unset PSDP_ALGORITHMS PSDP_ALGORITHM PSDP_TUNING_FILE

plot=()
if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  plot=(--plot "$dir/compare.png")
else
  echo "compare_run_test: no plot checked: /usr/bin/python3 has no matplotlib (Debian: python3-matplotlib)"
fi
out=$(timeout 300 "$repo/perf/compare/run_compare.sh" --build "$build" --no-ucx --no-mpi --no-gloo --no-ucc \
  --reps 1 --min 64K --max 128K --iters 2 --bytes-per-size 256K --warmup 1 --psdp-buffers private --load both \
  --output "$dir/compare.md" "${plot[@]}" 2>&1)
status=$?
echo "$out"
[[ $status -eq 0 ]] || fail "run_compare.sh exited $status"
for heading in "## quiet machine" "## under contention: 2 spinning shell loops" \
  "## psdp (private) under contention: loaded/quiet"; do
  grep -qF "$heading" "$dir/compare.md" || fail "no '$heading' in the table"
done
# Two psdp tables (quiet, loaded) and the ratios, each with a 64K and a 128K row of numbers.
rows=$(grep -cE '^\| (64K|128K) \| [0-9]+\.[0-9]+ \|' "$dir/compare.md")
[[ $rows -eq 6 ]] || fail "expected 6 rows of psdp figures at 64K and 128K, found $rows"
# The kernel-copy bound (cma_bound.c, built with cc) in the peers' table, beside put_bw (not run here: n/a).
grep -qE '^\| 64K \| n/a \| [0-9]+\.[0-9]+ \|$' "$dir/compare.md" || fail "no cma bound at 64K in the peers' table"
# --bytes-per-size 256K: 64K ran 4 timed iterations in a run of its own, 128K the --iters 2.
grep -qF "timed iterations per size 64K 4, 128K 2," "$dir/compare.md" ||
  fail "the table does not give 64K's 4 and 128K's 2 timed iterations"
grep -qF "every system on small pages (no huge-page advice), system THP mode" "$dir/compare.md" ||
  fail "the table does not name the pages"
if ((${#plot[@]})); then
  [[ -s $dir/compare.png ]] || fail "no plot written"
fi
# Read from /proc rather than with pgrep: procps is not among the packages scripts/setup.sh installs.
spinning=""
for f in /proc/[0-9]*/cmdline; do
  cmd=$(tr '\0' ' ' < "$f" 2> /dev/null) || continue
  [[ $cmd == "sh -c while :; do :; done " ]] && spinning+=" pid $(basename "$(dirname "$f")")"
done
[[ -z $spinning ]] || fail "a spinning shell loop outlived run_compare.sh:$spinning"

# A --ucc-prefix without an installed UCC: UCC left out, naming the prefix, and psdp still measured.
mkdir "$dir/no-ucc"
msg=$(timeout 300 "$repo/perf/compare/run_compare.sh" --build "$build" --no-ucx --no-mpi --no-gloo \
  --ucc-prefix "$dir/no-ucc" --reps 1 --min 64K --max 64K --iters 2 --warmup 1 --psdp-buffers private \
  --output "$dir/no-ucc.md" 2>&1)
status=$?
[[ $status -eq 0 && $msg == *"UCC left out: none installed in $dir/no-ucc"* ]] ||
  fail "run_compare.sh with an empty --ucc-prefix: exit $status, '$msg'"

mkdir "$dir/not-ucc"
msg=$("$repo/perf/compare/build_ucc.sh" "$dir/not-ucc" 2>&1)
status=$?
[[ $status -eq 2 && $msg == *"$dir/not-ucc is not a UCC source tree"* ]] ||
  fail "build_ucc.sh on an empty directory: exit $status, '$msg'"

if ((failures)); then
  echo "$failures failure(s)"
  exit 1
fi
echo "compare_run_test: passed"
