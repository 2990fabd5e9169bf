#!/usr/bin/env bash
# Starts N ranks of a program the way another launcher would, with that launcher's variables instead of
# psdp-run's, and fails unless every rank exits 0 within the time limit. Every rank is reaped.
#   launch_with_env.sh torchrun|openmpi|slurm N TIMEOUT_S PROGRAM
set -uo pipefail
launcher=$1 n=$2 limit=$3 program=$4
secret=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
# A port range of this run's own, so parallel tests do not meet each other's roots: below the kernel's
# ephemeral ports (32768 up), which any outgoing connection may hold, and apart from psdp's default
# PSDP_PORT_RANGE (29600-29699).
base=$((21000 + ($$ % 1000) * 8))
pids=()
cleanup() { for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap cleanup EXIT

for ((r = 0; r < n; r++)); do
  case $launcher in
    # torchrun: MASTER_PORT belongs to torchrun's store, psdp scans PSDP_PORT_RANGE on MASTER_ADDR.
    torchrun) vars=(RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=1
                    TORCHELASTIC_RUN_ID=run-$$ PSDP_PORT_RANGE=$base-$((base + 7))) ;;
    # Open MPI and Slurm carry no rendezvous: PSDP_ROOT_ADDR names it; the secret is derived from the job id.
    openmpi) vars=(OMPI_COMM_WORLD_RANK=$r OMPI_COMM_WORLD_SIZE=$n OMPI_MCA_ess_base_jobid=$$
                   PSDP_ROOT_ADDR=127.0.0.1:$base) ;;
    slurm) vars=(SLURM_PROCID=$r SLURM_NTASKS=$n SLURM_JOB_ID=$$ SLURM_STEP_ID=0 PSDP_ROOT_ADDR=127.0.0.1:$base) ;;
    *) echo "unknown launcher $launcher"; exit 2 ;;
  esac
  [[ $launcher == torchrun ]] && vars+=(PSDP_JOB_SECRET=$secret)
  env -u PSDP_RANK -u PSDP_WORLD_SIZE -u PSDP_ROOT_ADDR -u PSDP_JOB_SECRET "${vars[@]}" \
    timeout -s KILL "$limit" "$program" > >(sed "s/^/[$launcher $r] /") 2>&1 &
  pids+=($!)
done
failed=0
for p in "${pids[@]}"; do
  wait "$p" || failed=1
done
pids=()
((failed == 0)) && echo "$launcher: all $n ranks passed"
exit $failed
