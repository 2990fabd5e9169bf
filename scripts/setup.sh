#!/usr/bin/env bash
# Installs what psdp needs from Debian's packages (only what is missing), then configures and builds it.
#   scripts/setup.sh [build-dir] [extra cmake args...]
# Environment: PSDP_BUILD_TYPE (default RelWithDebInfo); PSDP_BUILD_TARGET (default: everything).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build}
shift || true

# clang and libclang-rt-14-dev (libFuzzer's runtime, only recommended by clang's packages) build the fuzz
# targets of scripts/fuzz.sh; libssl-dev gives the bootstrap's HMAC; python3-venv the virtual environment of
# scripts/python_tests.sh; iproute2 the hosts of the multi-host test (tests/mp/multi_host_netns.sh);
# python3-matplotlib the heatmap of psdp-tune's sweep (perf/tune_heatmap.py).
packages=(build-essential cmake ninja-build pkg-config python3 python3-venv binutils
          libucx-dev ucx-utils libhwloc-dev libhwloc-plugins hwloc libxml2-dev libspdlog-dev libfmt-dev
          libgtest-dev libgmock-dev libbenchmark-dev libssl-dev
          clang libclang-rt-14-dev iproute2 python3-matplotlib)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  as_root=()
  [[ $(id -u) -eq 0 ]] || as_root=(sudo)
  "${as_root[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="${PSDP_BUILD_TYPE:-RelWithDebInfo}" -DPSDP_WERROR=ON "$@" >/dev/null
cmake --build "$build_dir" --parallel "$(nproc)" ${PSDP_BUILD_TARGET:+--target "$PSDP_BUILD_TARGET"}
