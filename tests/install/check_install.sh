#!/usr/bin/env bash
# Installs the build tree into a scratch prefix and uses it as an outside user would, with no LD_LIBRARY_PATH
# and after moving the prefix elsewhere (the installed runtime paths and psdp.pc are relative): runs every
# installed tool, then builds a C program with find_package(psdp CONFIG) and with pkg-config (plus the runtime
# path flag README gives) and runs each alone and as 2 ranks under the installed psdp-run. psdp-perf step must
# find the installed model shapes from its own path. Also checks that
# libpsdp.so exports only psdp_* symbols and carries a SONAME.
#   check_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build_dir=$1
source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset LD_LIBRARY_PATH

cmake --install "$build_dir" --prefix "$work/staged" >/dev/null
mv "$work/staged" "$work/prefix"
prefix=$work/prefix
bin=$prefix/bin
lib=$(ls "$prefix"/lib*/libpsdp.so)

soname=$(objdump -p "$lib" | awk '/SONAME/ {print $2}')
[[ "$soname" == libpsdp.so.0 ]] || { echo "SONAME is '$soname', expected libpsdp.so.0"; exit 1; }
leaked=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^psdp_' || true)
[[ -z "$leaked" ]] || { echo "libpsdp.so exports symbols outside psdp_*:"; echo "$leaked" | head; exit 1; }

# step NAME COMMAND...: runs one command, its output kept and shown only when it fails.
step() {
  local name=$1
  shift
  if ! "$@" >"$work/out" 2>&1; then
    echo "install check failed: $name: $*"
    tail -n 30 "$work/out"
    exit 1
  fi
  echo "ok: $name"
}

step "psdp-info" "$bin/psdp-info"
step "psdp-plan" "$bin/psdp-plan" --model "$source_dir/tests/data/qwen2.5.json" --name Qwen2.5-0.5B --world 8 --group 4
step "psdp-topo on this machine" env PSDP_TOPO_FILE= "$bin/psdp-topo"
step "psdp-topo on a file" "$bin/psdp-topo" --file "$source_dir/tests/data/topologies/nccl/azure-ndv4-topo.xml" --hosts 2
step "psdp-perf under psdp-run" "$bin/psdp-run" -n 2 --timeout 120 -- "$bin/psdp-perf" ar -b 1M -e 1M -n 2 -w 1 -c 1
step "psdp-perf step under psdp-run" "$bin/psdp-run" -n 2 --timeout 120 -- "$bin/psdp-perf" step --scale 0.01 --iters 1 \
  --warmup 0 --chunk-bytes 1M
grep -q "shapes from $prefix/bin/../share/psdp/qwen2.5.json" "$work/out" ||
  { echo "psdp-perf step did not read the installed shape file:"; head -n 3 "$work/out"; exit 1; }
step "psdp-perf-teams under psdp-run" "$bin/psdp-run" -n 2 --timeout 120 -- "$bin/psdp-perf-teams" -b 1M -e 1M -n 2 -w 1 -c 1
step "psdp-step-bound" "$bin/psdp-step-bound" --params 1M --chunk-bytes 64K --iters 1

cmake -S "$source_dir/tests/install/consumer" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
step "find_package consumer" "$work/cmake-build/consumer"
step "find_package consumer, 2 ranks" "$bin/psdp-run" -n 2 --timeout 120 -- "$work/cmake-build/consumer"

export PKG_CONFIG_PATH="$(dirname "$lib")/pkgconfig"
cc -std=c99 -Wall -Werror "$source_dir/tests/install/consumer/consumer.c" -o "$work/pc-consumer" \
  $(pkg-config --cflags --libs psdp) -Wl,-rpath,"$(pkg-config --variable=libdir psdp)"
step "pkg-config consumer" "$work/pc-consumer"
step "pkg-config consumer, 2 ranks" "$bin/psdp-run" -n 2 --timeout 120 -- "$work/pc-consumer"
echo "install check passed"
