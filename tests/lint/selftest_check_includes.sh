#!/usr/bin/env bash
# The include checker must flag an upward include and a tool that reaches into src/.
set -uo pipefail
checker=$1
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/src/base" "$tree/src/core" "$tree/tools"
echo '#include "core/communicator.h"' > "$tree/src/base/bad.h"
echo '#include "base/status.h"' > "$tree/src/core/good.h"
echo '#include "base/status.h"' > "$tree/tools/bad_tool.cc"
out=$(python3 "$checker" "$tree")
rc=$?
echo "$out"
[[ $rc -eq 1 ]] || { echo "checker exited $rc on a tree with violations"; exit 1; }
grep -q 'src/base/bad.h:1' <<<"$out" || { echo "upward include not reported"; exit 1; }
grep -q 'tools/bad_tool.cc:1' <<<"$out" || { echo "tool include not reported"; exit 1; }
grep -q 'good.h' <<<"$out" && { echo "allowed include reported"; exit 1; }
echo "checker self-test passed"
