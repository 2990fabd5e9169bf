#!/usr/bin/env bash
# The main job: builds psdp, then runs 2 local ranks over UCX shared memory and prints nccl-tests style
# bandwidth tables for all-reduce, reduce-scatter and all-gather from 1 MiB to 256 MiB, verified exactly: first on
# private buffers (the direct algorithm over CMA), then on psdp_mem_alloc buffers (-R 1: direct, the other
# ranks' buffers mapped); then a whole training step of Qwen2.5-0.5B's shapes (float32, Adam on the owned
# pieces), pipelined against bulk, with communication and the update each also alone (psdp-perf step; the
# model is scaled to 2/ranks above 2 ranks, to fit the memory of one machine).
#   scripts/run.sh [ranks]
set -euo pipefail
cd "$(dirname "$0")/.."
ranks=${1:-2}
scripts/setup.sh build
for shared in 0 1; do
  for coll in ar rs ag; do
    build/bin/psdp-run -n "$ranks" --timeout 600 -- build/bin/psdp-perf "$coll" -b 1M -e 256M -f 2 -n 10 -w 3 -c 1 \
      -R "$shared"
  done
done
scale=$(awk -v r="$ranks" 'BEGIN { print (r > 2 ? 2 / r : 1) }')
build/bin/psdp-run -n "$ranks" --timeout 900 -- build/bin/psdp-perf step --iters 5 --scale "$scale"
