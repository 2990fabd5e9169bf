#!/usr/bin/env bash
# Runs the README's two commands (scripts/run.sh, then scripts/test.sh) in a clean Debian 12 root, as on a
# fresh machine: debootstrap builds a minimal bookworm root with Debian's bookworm, bookworm-updates and
# bookworm-security sources and the files every installed Debian has (/etc/hosts), the checkout's
# files (tracked and untracked, not ignored, so uncommitted work counts) are copied in, and the commands run
# under chroot with a clean environment, /proc, /sys, /dev and /dev/shm bind-mounted. It catches a package
# that scripts/setup.sh forgets to install because this machine happens to have it. It checks the userland
# only (the kernel is this machine's) and takes a while (40-60 minutes on 2 cores), so it is a gate run by
# hand before resolving work that touches dependencies, not a CI stage. Needs root.
#   scripts/fresh-check.sh [root-dir]        (default /var/tmp/psdp-fresh-root, recreated each run; a directory
#                                            that exists must be one this script made: it holds its marker)
# Environment: FRESH_KEEP=1 keeps the root afterwards (it is kept anyway when a command fails);
#              FRESH_MIRROR, the Debian mirror for debootstrap (default http://deb.debian.org/debian).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
root=${1:-/var/tmp/psdp-fresh-root}
mirror=${FRESH_MIRROR:-http://deb.debian.org/debian}
marker=.psdp-fresh-root
[[ $(id -u) -eq 0 ]] || { echo "fresh-check: needs root (debootstrap, mount, chroot)" >&2; exit 2; }

stage() {
  local name=$1
  shift
  local start=$SECONDS
  echo "=== fresh-check: $name"
  "$@"
  echo "=== fresh-check: $name took $((SECONDS - start)) s"
}

mounted=()
unmount_all() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null || true; done
  mounted=()
}
finish() {
  local rc=$?
  unmount_all
  if [[ $rc -eq 0 && -z "${FRESH_KEEP:-}" ]]; then
    rm -rf --one-file-system "$root"
  else
    echo "fresh-check: the root stays at $root"
  fi
  echo "=== fresh-check: $([[ $rc -eq 0 ]] && echo passed || echo "FAILED ($rc)") in $((SECONDS - total_start)) s"
}

make_root() {
  command -v debootstrap >/dev/null || {
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
  }
  if [[ -e "$root" ]]; then
    [[ -f "$root/$marker" ]] || { echo "fresh-check: $root exists and is not a root this script made" >&2; return 1; }
    local dir
    for dir in dev/shm dev/pts dev sys proc; do umount -l "$root/$dir" 2>/dev/null || true; done  # an interrupted run's
    rm -rf --one-file-system "$root"
  fi
  mkdir -p "$root"
  touch "$root/$marker"
  debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.debootstrap.log" 2>&1 ||
    { tail -n 20 "$root.debootstrap.log"; return 1; }
  rm -f "$root.debootstrap.log"
  # What an installed Debian 12 has and debootstrap leaves out: all three suites, and the hosts file that
  # resolves localhost.
  cat >"$root/etc/apt/sources.list" <<SOURCES
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb http://security.debian.org/debian-security bookworm-security main
SOURCES
  printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' "$(hostname)" \
    >"$root/etc/hosts"
  cp -L /etc/resolv.conf "$root/etc/resolv.conf"
  carry_network_trust
}

# This machine's network may need certificate authorities of its own (an egress proxy's) to reach PyPI: the
# root trusts what this machine trusts, as it resolves names as this machine does, and the commands get the
# variables that point at the bundle (pip and Python read them). That is the network's, not a package a
# fresh machine would lack.
trust_env=()
carry_network_trust() {
  local var file
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    mkdir -p "$root/usr/local/share/ca-certificates"
    cp -L /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
  fi
  for var in SSL_CERT_FILE PIP_CERT REQUESTS_CA_BUNDLE; do
    file=${!var:-}
    [[ -n $file && -f $file ]] || continue
    mkdir -p "$root$(dirname "$file")"
    cp -L "$file" "$root$file"
    trust_env+=("$var=$file")
  done
}

copy_checkout() {
  mkdir -p "$root/work/psdp"
  git -c safe.directory="$repo" -C "$repo" ls-files -z --cached --others --exclude-standard |
    (cd "$repo" && tar --null --ignore-failed-read -T - -cf -) | tar -x -C "$root/work/psdp"
}

mount_system() {
  local dir
  for dir in proc sys dev dev/pts dev/shm; do
    mkdir -p "$root/$dir"
    mount --bind "/$dir" "$root/$dir"
    mounted+=("$root/$dir")
    # Slave, so that the mounts below it made here never propagate back to this machine's own tree.
    mount --make-rslave "$root/$dir"
  done
}

in_root() {
  chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb "${trust_env[@]}" \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    bash -c "cd /work/psdp && $1"
}

total_start=$SECONDS
trap finish EXIT
stage "debootstrap bookworm into $root" make_root
stage "copy the checkout" copy_checkout
mount_system
stage "scripts/run.sh" in_root scripts/run.sh
stage "scripts/test.sh" in_root scripts/test.sh
