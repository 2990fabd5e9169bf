#!/usr/bin/env bash
# Installs the build tree into a scratch prefix, then builds and runs a C program against it twice: with
# find_package(psdp CONFIG) and with pkg-config. Also checks that libpsdp.so exports only psdp_* symbols
# and carries a SONAME.
set -euo pipefail
build_dir=$1
source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

cmake --install "$build_dir" --prefix "$prefix" >/dev/null
lib=$(ls "$prefix"/lib*/libpsdp.so)

soname=$(objdump -p "$lib" | awk '/SONAME/ {print $2}')
[[ "$soname" == libpsdp.so.0 ]] || { echo "SONAME is '$soname', expected libpsdp.so.0"; exit 1; }
leaked=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^psdp_' || true)
[[ -z "$leaked" ]] || { echo "libpsdp.so exports symbols outside psdp_*:"; echo "$leaked" | head; exit 1; }

cmake -S "$source_dir/tests/install/consumer" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
LD_LIBRARY_PATH="$(dirname "$lib")" "$work/cmake-build/consumer"

export PKG_CONFIG_PATH="$(dirname "$lib")/pkgconfig"
cc -std=c99 -Wall -Werror "$source_dir/tests/install/consumer/consumer.c" -o "$work/pc-consumer" \
  $(pkg-config --cflags --libs psdp)
LD_LIBRARY_PATH="$(dirname "$lib")" "$work/pc-consumer"
echo "install check passed"
