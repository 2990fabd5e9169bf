// Rank, world size and rendezvous from the environment a launcher set, for psdp_comm_init_from_env.
// Launchers are tried in order: psdp's own PSDP_* variables, torchrun, Open MPI, Slurm.
#pragma once

#include <string>
#include <string_view>

#include "base/config.h"
#include "base/environment.h"
#include "base/status.h"
#include "core/rendezvous_id.h"

namespace psdp::core {

struct LaunchInfo {
  std::string launcher;  // "psdp", "torchrun", "openmpi" or "slurm"
  int rank = 0;
  int nranks = 1;
  RendezvousId id;              // port 0: scan config.port_range
  bool secret_derived = false;  // the secret came from the launcher's job id, not PSDP_JOB_SECRET
  int root_listener_fd = -1;    // psdp-run's rank 0: the bootstrap socket it bound for us (PSDP_ROOT_FD)
};

// Errors: invalid argument naming the variable that is missing or malformed and the launcher (e.g.
// "PSDP_ROOT_ADDR is required under Open MPI"), or listing what to set when no launcher is recognised.
// PSDP_ROOT_ADDR and MASTER_ADDR may name a host, which is resolved here (blocks on the resolver), so that
// every rank holds the same numeric address. Values of PSDP_JOB_SECRET never appear in messages.
Result<LaunchInfo> launchInfoFromEnv(const Environment& env, const Config& config);

// The secret of a job that has no PSDP_JOB_SECRET: a 128-bit hash of "psdp-derived-secret:<launcher>:<job id>".
// Every rank of the job derives the same value without any exchange, but so can anyone who knows the job id
// (often visible to every user of the cluster), so it only keeps apart jobs that do not attack each other;
// a random PSDP_JOB_SECRET is the real protection.
JobSecret deriveJobSecret(std::string_view launcher, std::string_view job_id);

}  // namespace psdp::core
