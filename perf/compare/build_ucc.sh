#!/usr/bin/env bash
# Builds UCC, the closest peer of psdp's host collectives (collectives over UCX), from a source tree you point it
# at, against Debian's UCX and Open MPI, so that perf/compare/run_compare.sh can build its ucc_coll_bench.c
# against it and run it beside psdp-perf. It fetches nothing: the source tree is yours (for example a checkout of
# https://github.com/openucx/ucc at a release tag), the rest comes from Debian's packages, installed where missing.
#   perf/compare/build_ucc.sh SOURCE_DIR [PREFIX]      (default PREFIX ~/.cache/psdp/ucc, where run_compare.sh
#                                                      looks; SOURCE_DIR is built out of tree, not modified
#                                                      beyond autogen.sh's generated files)
# Debian 12's UCX is 1.13: UCC up to 1.3.0 builds against it (git clone -b v1.3.0
# https://github.com/openucx/ucc); 1.4 and later need UCX 1.15's exported memory handles. CUDA is left out: the
# comparison is of host memory.
set -euo pipefail
[[ $# -ge 1 && $# -le 2 && $1 != -h && $1 != --help ]] || {
  sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
}
src=$(cd "$1" && pwd)
prefix=${2:-$HOME/.cache/psdp/ucc}
[[ -f $src/configure.ac && -d $src/src/components/tl/ucp ]] || {
  echo "build_ucc: $src is not a UCC source tree (no configure.ac with src/components/tl/ucp)" >&2
  exit 2
}

ucx_version=$(pkg-config --modversion ucx 2>/dev/null || true)
if grep -rqs EXPORTED_MEMH "$src/src/components/tl/ucp" &&
  [[ -n $ucx_version && $(printf '%s\n' 1.15 "$ucx_version" | sort -V | head -1) != 1.15 ]]; then
  echo "build_ucc: this UCC needs UCX 1.15 or later (exported memory handles); this machine has UCX" \
    "$ucx_version: use UCC 1.3.0 or older" >&2
  exit 2
fi

# autoconf, automake and libtool run UCC's autogen.sh; libopenmpi-dev gives ucc_coll_bench (and UCC's own
# ucc_perftest) their MPI bootstrap.
packages=(build-essential autoconf automake libtool pkg-config libucx-dev openmpi-bin libopenmpi-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "build_ucc: installing ${missing[*]}"
  as_root=()
  [[ $(id -u) -eq 0 ]] || as_root=(sudo)
  "${as_root[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

build=$(mktemp -d "${TMPDIR:-/tmp}/psdp-ucc-build.XXXXXX")
trap 'rm -rf "$build"' EXIT
[[ -x $src/configure ]] || (cd "$src" && ./autogen.sh >"$build/autogen.log" 2>&1) || {
  cat "$build/autogen.log" >&2
  exit 1
}
cd "$build"
echo "build_ucc: configuring $src for $prefix"
# -fno-optimize-strlen, for UCC's ucc_perftest, should you run it by hand: it allocates its host buffers with malloc and clears them with memset, which
# GCC otherwise turns into one calloc. calloc leaves fresh mappings unwritten, so every buffer the benchmark
# only reads (its inputs; in place, each rank's own block) stays the kernel's shared zero page: one 4 KiB page,
# always in cache, for every process_vm_readv and every load. Measured here, that made UCC's in-place
# all-gather of 64 MiB take 3.7-4.4 ms instead of 6.3-8.1 ms. Buffers that a framework hands over hold data in
# memory of their own, as psdp-perf's and mpi_coll_bench's do.
flags="-g -O2 -fno-optimize-strlen"
"$src/configure" --prefix="$prefix" --with-ucx=/usr --with-cuda=no --with-mpi=/usr --enable-optimizations \
  CFLAGS="$flags" CXXFLAGS="$flags" >configure.log 2>&1 || {
  tail -40 configure.log >&2
  exit 1
}
echo "build_ucc: building ($(nproc) jobs)"
make -j"$(nproc)" >make.log 2>&1 || {
  grep -m 20 -B 2 -A 6 'error' make.log >&2 || tail -40 make.log >&2
  exit 1
}
make install >install.log 2>&1 || {
  tail -20 install.log >&2
  exit 1
}
[[ -f $prefix/include/ucc/api/ucc.h && -e $prefix/lib/libucc.so ]] || {
  echo "build_ucc: no include/ucc/api/ucc.h and lib/libucc.so in $prefix after make install" >&2
  exit 1
}
echo "build_ucc: UCC in $prefix ($("$prefix/bin/ucc_info" -v 2>/dev/null | head -1))"
