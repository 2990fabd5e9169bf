#!/usr/bin/env bash
# The include checker must flag an upward include, collectives that reach past the transport's interfaces
# (CMA, memfd segments), and a tool that reaches into src/.
set -uo pipefail
checker=$1
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/src/base" "$tree/src/core" "$tree/src/coll" "$tree/tools"
echo '#include "core/communicator.h"' > "$tree/src/base/bad.h"
echo '#include "base/status.h"' > "$tree/src/core/good.h"
echo '#include "transport/cross_memory.h"' > "$tree/src/coll/reads_peers.cc"
echo '#include "transport/shared_segment.h"' > "$tree/src/coll/maps_peers.cc"
echo '#include "transport/peer_memory.h"' > "$tree/src/coll/good_peer_memory.cc"
echo '#include "base/status.h"' > "$tree/tools/bad_tool.cc"
out=$(python3 "$checker" "$tree")
rc=$?
echo "$out"
[[ $rc -eq 1 ]] || { echo "checker exited $rc on a tree with violations"; exit 1; }
grep -q 'src/base/bad.h:1' <<<"$out" || { echo "upward include not reported"; exit 1; }
grep -q 'tools/bad_tool.cc:1' <<<"$out" || { echo "tool include not reported"; exit 1; }
grep -q 'src/coll/reads_peers.cc:1' <<<"$out" || { echo "CMA header in coll not reported"; exit 1; }
grep -q 'src/coll/maps_peers.cc:1' <<<"$out" || { echo "memfd segment header in coll not reported"; exit 1; }
grep -q 'good.h\|good_peer_memory' <<<"$out" && { echo "allowed include reported"; exit 1; }
echo "checker self-test passed"
