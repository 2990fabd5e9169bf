#!/usr/bin/env bash
# psdp-topo end to end: every shipped topology file in every format (the NCCL graph file must be refused), the
# live machine, PSDP_TOPO_FILE, concrete content, JSON that parses, and the exit codes of bad input.
#   psdp_topo_test.sh PSDP_TOPO_BINARY TOPOLOGY_DIR
set -uo pipefail
topo=$1
dir=$2
failures=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# run EXPECTED_EXIT ARGS...: runs psdp-topo, output in $work/out and $work/err.
run() {
  local expected=$1
  shift
  "$topo" "$@" >"$work/out" 2>"$work/err"
  local code=$?
  if [[ $code -ne $expected ]]; then
    fail "psdp-topo $* exited $code, expected $expected; stderr: $(cat "$work/err")"
    return 1
  fi
}

expect_out() { grep -qF -- "$1" "$work/out" || fail "stdout of the last run lacks '$1'"; }
expect_err() { grep -qF -- "$1" "$work/err" || fail "stderr of the last run lacks '$1': $(cat "$work/err")"; }
json_ok() { python3 -c 'import json,sys; json.load(sys.stdin)' <"$work/out" || fail "invalid JSON: $*"; }

for file in "$dir"/hwloc/*.xml "$dir"/nccl/*.xml; do
  if [[ $file == *graph* ]]; then
    run 1 --file "$file" && expect_err "graph" && expect_err "$file"
    continue
  fi
  run 0 --file "$file" && expect_out "topology: $file" && expect_out "shard groups"
  run 0 --file "$file" --hosts 2 --json && json_ok "$file"
  run 0 --file "$file" --dot && expect_out "digraph topology {"
done

# cuda0 and mlx5_0 share one PCIe switch: the cell of row cuda0, column mlx5_0 of the matrix is PIX.
run 0 --file "$dir/hwloc/hwloc-32em64t-2n8c2t-pci-wholeio.xml"
cell=$(awk '/^paths:/ {p = 1; getline; for (i = 1; i <= NF; i++) col[$i] = i; next}
            p && NF == 0 {p = 0}
            p && $1 == "cuda0" {print $(col["mlx5_0"] + 1)}' "$work/out")
[[ $cell == PIX ]] || fail "cuda0-mlx5_0 is '$cell', expected PIX"

# ND A100 v4: 8 GPUs; on 2 hosts every shard group of 8 stays inside one host.
run 0 --file "$dir/nccl/azure-ndv4-topo.xml" && expect_out "8 GPUs, 8 NICs"
run 0 --file "$dir/nccl/azure-ndv4-topo.xml" --hosts 2 --json && python3 -c '
import json, sys
m = json.load(sys.stdin)["mapping"]
host = {r["rank"]: r["host"] for r in m["ranks"]}
assert len(host) == 16 and m["group_size"] == 8, m
assert all(len({host[r] for r in g}) == 1 for g in m["shard_groups"]), m["shard_groups"]
assert all(len({host[r] for r in g}) == 2 for g in m["replica_groups"]), m["replica_groups"]
assert sorted(m["rank_layout"]) == list(range(16))
' <"$work/out" || fail "ndv4 --hosts 2: groups do not stay inside hosts"

# The live machine (PSDP_TOPO_FILE cleared by CTest), and PSDP_TOPO_FILE in its place.
run 0 && expect_out "(live)" && expect_out "mapping: 1 host x"
run 0 --json && json_ok live
run 0 --dot && expect_out "digraph topology {"
PSDP_TOPO_FILE="$dir/nccl/azure-ndv2-topo.xml" run 0 && expect_out "topology: $dir/nccl/azure-ndv2-topo.xml (nccl-xml)"
PSDP_TOPO_FILE="$work/absent.xml" run 1 && expect_err "PSDP_TOPO_FILE" && expect_err "absent.xml"

# Missing and malformed files fail naming the file.
run 1 --file "$work/missing.xml" && expect_err "$work/missing.xml"
printf '<?xml version="1.0"?>\n<system version="1">\n  <cpu numaid="0"\n' >"$work/malformed.xml"
run 1 --file "$work/malformed.xml" && expect_err "$work/malformed.xml"
printf 'not xml at all\n' >"$work/text.xml"
run 1 --file "$work/text.xml" && expect_err "$work/text.xml"

# A bad command line exits 2 with the reason and the usage.
run 0 --help && expect_out "usage: psdp-topo"
run 2 --bogus && expect_err "unknown option --bogus" && expect_err "usage: psdp-topo"
run 2 --hosts 0 && expect_err "bad value '0' for --hosts"
run 2 --file && expect_err "--file needs a value"
run 2 --json --dot && expect_err "exclude each other"
run 2 --file "$dir/nccl/azure-ndv4-topo.xml" --group 3 && expect_err "--group 3 does not divide the 8 ranks"

if [[ $failures -ne 0 ]]; then
  echo "$failures failure(s)" >&2
  exit 1
fi
echo "psdp-topo: all checks passed"
