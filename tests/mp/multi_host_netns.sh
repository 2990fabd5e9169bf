#!/usr/bin/env bash
# Runs a multi-rank program on H hosts made on this machine, and fails unless every rank exits 0 (or, with
# --cut, unless every rank fails within PSDP_TIMEOUT + 5 s of a link cut in the middle of the run).
#   multi_host_netns.sh [--cut REGEX] [--expect REGEX] H W LIMIT_S PROGRAM [ARGS...]
# Each host is a network, IPC, UTS, PID and mount namespace of its own (unshare --net --ipc --uts --pid
# --fork --mount) with its own hostname and /proc: UCX then finds no shared memory or CMA between
# hosts (it compares the boot id, the IPC namespace and pids), the shard mapper tells the hosts apart by
# hostname, and ranks on different hosts talk over TCP. The hosts hang off one bridge through veth pairs,
# all of it inside a network namespace of this test's own, so no traffic leaves it. Rank r runs on host
# r % H (so a layout that ignored the hosts would be wrong) with PSDP_LOG_LEVEL=info; the UCX lanes that
# each rank logged for each peer are checked: shared memory within a host, tcp over eth0 between hosts.
# --cut REGEX: once rank 0 has printed a line matching REGEX (bash's =~), the link of the last host is set
# down. --expect REGEX: every rank's log must have a line matching REGEX (grep -E).
# Exit status: 0 passed, 1 failed, 77 skipped (no root, or namespaces, veth or bridges unavailable here).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
skip() { echo "SKIPPED: $*: the multi-host test needs them"; exit 77; }

# A host: wait for the link, name the host, start its ranks, report each one's exit status and end time.
if [[ ${1:-} == __host ]]; then
  shift
  dir=$1 h=$2 hosts=$3 world=$4 limit=$5
  shift 5
  # A /proc of this pid namespace, mounted over a private copy of the outer one: unshare --mount-proc would
  # first make / private, which fails where / is not a mount point (a chroot).
  mount --make-private /proc && mount -t proc proc /proc || { echo "host $h: cannot mount its /proc"; exit 1; }
  exec 3<>"$dir/go$h"
  echo ready > "$dir/ready$h"
  read -r -t 30 -u 3 _ || { echo "host $h: no link within 30 s"; exit 1; }
  hostname "host$h"
  ip link set lo up
  ip addr add "10.77.0.$((h + 1))/24" dev eth0 && ip link set eth0 up || exit 1
  secret=$(cat "$dir/secret")
  for ((r = h; r < world; r += hosts)); do
    (
      env PSDP_RANK=$r PSDP_WORLD_SIZE="$world" PSDP_ROOT_ADDR=10.77.0.1:29500 PSDP_JOB_SECRET="$secret" \
        PSDP_LOG_LEVEL=info timeout -s KILL "$limit" "$@" > "$dir/rank$r.log" 2>&1
      echo "$? $(date +%s.%N)" > "$dir/rank$r.rc"
    ) &
  done
  wait
  exit 0
fi

# The switch: this test's own network namespace, with the bridge the hosts' links hang off.
if [[ ${1:-} == __switch ]]; then
  shift
  cut_pattern= expect_pattern=
  while [[ ${1:-} == --cut || ${1:-} == --expect ]]; do
    if [[ $1 == --cut ]]; then cut_pattern=$2; else expect_pattern=$2; fi
    shift 2
  done
  hosts=$1 world=$2 limit=$3
  shift 3
  dir=$(mktemp -d)
  host_pids=()
  cleanup() {
    # Killing a host's unshare (--kill-child) kills its pid namespace, and with it every rank left there.
    for p in "${host_pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$dir"
  }
  trap cleanup EXIT
  ip link set lo up
  ip link add br0 type bridge 2>/dev/null || skip "a bridge (ip link add type bridge) cannot be made here"
  ip link set br0 up
  od -An -N16 -tx1 /dev/urandom | tr -d ' \n' > "$dir/secret"
  for ((h = 0; h < hosts; ++h)); do
    mkfifo "$dir/go$h" "$dir/ready$h"
    exec {ready}<>"$dir/ready$h"
    unshare --net --ipc --uts --pid --fork --mount --propagation unchanged --kill-child -- "$here" __host "$dir" $h \
      "$hosts" "$world" "$limit" "$@" > "$dir/host$h.log" 2>&1 &
    host_pids+=($!)
    # The host's unshare has entered its network namespace once the host has said it is ready.
    read -r -t 30 -u $ready _ || { echo "host $h did not start"; cat "$dir/host$h.log"; exit 1; }
    exec {ready}<&-
    ip link add "vh$h" type veth peer name eth0 netns "${host_pids[$h]}" || skip "veth pairs cannot be made here"
    ip link set "vh$h" master br0 up
    echo go > "$dir/go$h"
  done
  echo "hosts: $hosts, ranks: $world (rank r on host r % $hosts), program: $*"

  status=0
  if [[ -n $cut_pattern ]]; then
    # Rank 0's lines as they come (tail -F waits for the file to appear), until one matches.
    exec {lines}< <(exec tail -F -n +1 "$dir/rank0.log" 2>/dev/null)
    tail_pid=$! found=0
    while IFS= read -r -t "$limit" -u $lines line; do
      if [[ $line =~ $cut_pattern ]]; then found=1; break; fi
    done
    kill "$tail_pid"
    exec {lines}<&-
    ((found)) || { echo "rank 0 never printed a line matching '$cut_pattern'"; status=1; }
    cut_at=$(date +%s.%N)
    ip link set "vh$((hosts - 1))" down
    echo "cut the link of host $((hosts - 1)) after rank 0 printed '$cut_pattern'"
  fi
  for p in "${host_pids[@]}"; do wait "$p" || status=1; done
  host_pids=()
  for ((h = 0; h < hosts; ++h)); do sed "s/^/[host $h] /" "$dir/host$h.log"; done

  # Every rank's log; then the lanes UCX chose.
  bound=$(( ${PSDP_TIMEOUT:-60} + 5 ))
  for ((r = 0; r < world; ++r)); do
    sed "s/^/[rank $r] /" "$dir/rank$r.log"
    read -r rc ended < "$dir/rank$r.rc" 2>/dev/null || { rc=missing ended=0; }
    if [[ -z $cut_pattern ]]; then
      [[ $rc == 0 ]] || { echo "rank $r exited with status $rc"; status=1; }
    else
      took=$(awk -v a="$cut_at" -v b="$ended" 'BEGIN { printf "%.2f", b - a }')
      echo "rank $r exited with status $rc $took s after the cut"
      [[ $rc != 0 && $rc != missing && $rc != 137 ]] || { echo "rank $r did not fail on its own"; status=1; }
      awk -v t="$took" -v b="$bound" 'BEGIN { exit !(t <= b) }' ||
        { echo "rank $r took longer than PSDP_TIMEOUT + 5 s = $bound s"; status=1; }
      grep -q "timed out\|failed\|error" "$dir/rank$r.log" || { echo "rank $r printed no error"; status=1; }
    fi
    if [[ -n $expect_pattern ]] && ! grep -qE -- "$expect_pattern" "$dir/rank$r.log"; then
      echo "rank $r printed no line matching '$expect_pattern'"
      status=1
    fi
  done
  # The lanes each rank's psdp logged per peer (PSDP_LOG_LEVEL=info): shared memory on the host, tcp over
  # the host's own link (eth0) between hosts, nothing else.
  echo "UCX lanes (psdp's 'peer P lanes' lines), per pair of hosts:"
  for ((r = 0; r < world; ++r)); do
    sed -n "s/.*\] peer \([0-9]*\) lanes \(.*\)/$r \1 \2/p" "$dir/rank$r.log"
  done | awk -v hosts="$hosts" -v world="$world" '
    $1 == $2 { next }
    {
      lanes = $0; sub(/^[0-9]+ [0-9]+ /, "", lanes); gsub(/\.[0-9]+\([^)]*\)/, "", lanes)
      same = ($1 % hosts == $2 % hosts)
      ok = same ? (lanes ~ /(sysv|posix)\/memory/ && lanes !~ /tcp/) : (lanes == "tcp/eth0")
      if (!ok) { print "rank " $1 " reaches rank " $2 " over " lanes ": wrong for " (same ? "one host" : "two hosts"); bad = 1 }
      seen[(same ? "same host:  " : "other host: ") lanes]++; pairs++
    }
    END {
      for (k in seen) print "  " k " (" seen[k] " rank pairs)"
      if (pairs != world * (world - 1)) { print "lanes logged for " pairs " of " world * (world - 1) " rank pairs"; bad = 1 }
      exit bad
    }' || status=1
  ((status == 0)) && echo "multi-host: passed"
  exit $status
fi

[[ $(id -u) -eq 0 ]] || skip "not root: network namespaces, veth pairs and bridges"
command -v ip > /dev/null || skip "iproute2 (ip) is not installed"
unshare --net --ipc --uts --pid --fork --mount --propagation unchanged sh -c \
  'mount --make-private /proc && mount -t proc proc /proc' 2>/dev/null ||
  skip "unshare --net --ipc --uts --pid --fork --mount, and a /proc mounted inside, fail here: namespaces"
exec unshare --net -- "$here" __switch "$@"
