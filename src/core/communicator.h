// A communicator: the ranks that met at one rendezvous, the transport connecting them and the collectives
// running over it. The C API (src/api) holds one per psdp_comm_h.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "base/config.h"
#include "base/deadline.h"
#include "base/log.h"
#include "base/status.h"
#include "coll/collectives.h"
#include "core/bootstrap.h"
#include "core/rendezvous_id.h"
#include "transport/transport.h"

namespace psdp::core {

class Communicator {
 public:
  // Meets the other ranks at `id`, connects the transport to each of them and prepares the collectives.
  // `root`, when this rank hosts the rendezvous (psdp_comm_init_from_env on rank 0), is kept until the
  // rendezvous is over. Blocks up to config.timeout_s.
  static Result<std::unique_ptr<Communicator>> create(int nranks, const RendezvousId& id, int rank,
                                                      const Config& config, std::unique_ptr<RootServer> root);
  ~Communicator();

  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return nranks_; }
  const Config& config() const { return config_; }
  const Logger& log() const { return log_; }

  // Collectives. Arguments have been validated by the caller. A timeout or a remote error fails the
  // communicator: every later call returns that error again.
  Status reduceScatter(const void* sendbuf, void* recvbuf, size_t recvcount, psdp_dtype_t dtype, psdp_op_t op);
  Status allGather(const void* sendbuf, void* recvbuf, size_t sendcount, psdp_dtype_t dtype);
  Status allReduce(const void* sendbuf, void* recvbuf, size_t count, psdp_dtype_t dtype, psdp_op_t op);

  // Waits for every rank (barrier), then flushes and closes the transport. Only destruction may follow.
  Status finalize();

 private:
  enum class State { kActive, kFailed, kFinalized };

  Communicator(int rank, int nranks, Config config, Logger log);
  Status connect(const RendezvousId& id, const Deadline& deadline);
  // Checks that a collective may run now.
  Status checkUsable(const char* what) const;
  // Records a fatal error: the communicator refuses further collectives.
  Status fail(Status status);

  const int rank_;
  const int nranks_;
  const Config config_;
  Logger log_;
  // Declared in creation order so that destruction runs in reverse: collectives before the transport.
  std::unique_ptr<transport::Transport> transport_;
  std::unique_ptr<coll::Collectives> collectives_;
  State state_ = State::kActive;
  Status failure_;
};

}  // namespace psdp::core
