// A communicator: the ranks that met at one rendezvous, the transport connecting them and the collectives
// running over it. The C API (src/api) holds one per psdp_comm_h.
#pragma once

#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "base/config.h"
#include "base/deadline.h"
#include "base/log.h"
#include "base/status.h"
#include "coll/collectives.h"
#include "core/bootstrap.h"
#include "core/coll_engine.h"
#include "core/rank_placement.h"
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

  // Collectives. Arguments have been validated by the caller. Each is posted to the engine; `request_p`
  // NULL: the call then waits for it (blocking), otherwise *request_p receives the request. A timeout or a
  // remote error fails the communicator: every later call returns that error again. One thread at a time
  // posts on a communicator (ranks must agree on the order of collectives anyway).
  Status reduceScatter(const void* sendbuf, void* recvbuf, size_t recvcount, psdp_dtype_t dtype, psdp_op_t op,
                       std::shared_ptr<Request>* request_p = nullptr);
  Status allGather(const void* sendbuf, void* recvbuf, size_t sendcount, psdp_dtype_t dtype,
                   std::shared_ptr<Request>* request_p = nullptr);
  Status allReduce(const void* sendbuf, void* recvbuf, size_t count, psdp_dtype_t dtype, psdp_op_t op,
                   std::shared_ptr<Request>* request_p = nullptr);
  Status broadcast(const void* sendbuf, void* recvbuf, size_t count, psdp_dtype_t dtype, int root,
                   std::shared_ptr<Request>* request_p = nullptr);
  Status barrier(std::shared_ptr<Request>* request_p = nullptr);

  // Requests of this communicator's collectives. Thread-safe. test: never blocks, true once done.
  // wait: false when `until` passed first (the request stays valid); the communicator's timeout applies to
  // each operation independently of `until`.
  bool test(Request& request);
  bool wait(Request& request, const Deadline& until);

  // Collective over this communicator: ranks with the same color (>= 0) form a new communicator ordered by
  // (key, rank here); color PSDP_SPLIT_NOCOLOR yields nullptr. The new one has its own transport (UCX worker),
  // wired up through this communicator's all-gather, so the two are independent afterwards. config
  // nullptr: this communicator's. Blocks up to the timeout; errors fail this communicator as a collective
  // would (except invalid argument, decided locally).
  Result<std::unique_ptr<Communicator>> split(int color, int key, const Config* config);

  // The two teams of the rank layout for shard groups of group_size (placements().layout): this rank's shard
  // group, where member g of group k is rank g, and its replica group, where replica k is rank k. Collective
  // over this communicator, as two splits; group_size is checked first, alike on every rank.
  struct LayoutTeams {
    std::unique_ptr<Communicator> shard;
    std::unique_ptr<Communicator> replica;
  };
  Result<LayoutTeams> splitLayout(int group_size, const Config* config);

  // Waits for every rank (barrier), then flushes and closes the transport. Only destruction may follow.
  Status finalize();

  // psdp_comm_abort: fails the transport with an aborted status (peers are told); whoever drives the
  // operations then completes them with it. Thread-safe, also against a blocked collective of this
  // communicator; not against destruction. A no-op after finalize().
  void abort();

  // Whether `what` (a collective, or anything else that talks to the peers) may run now: invalid usage once
  // finalized, the recorded error once failed or aborted.
  Status checkUsable(const char* what) const;

  // Where the ranks run (gathered at init; a split communicator keeps its members' part): the mapping and
  // the rank layout for any shard group size. Immutable after creation, so any thread may read it.
  const Placements& placements() const { return placements_; }

  // This communicator's premul-sum ops (thread-safe table); null once finalized.
  coll::CustomOps* customOps() { return collectives_ ? &collectives_->customOps() : nullptr; }

 private:
  enum class State { kActive, kFailed, kFinalized };

  Communicator(int rank, int nranks, Config config, Logger log);
  Status connect(const RendezvousId& id, const Deadline& deadline);
  Status createTransport();
  // Keeps the gathered descriptors and computes the mapping; logs this rank's placement.
  Status adoptPlacements(Result<Placements> placements);
  // Connects the transport to every rank's address, then prepares the collectives and the engine.
  Status connectPeers(const std::vector<std::vector<std::byte>>& addresses, const Deadline& deadline);
  // Queues a posted task; waits for it when request_p is NULL. REQUIRES: checkUsable() passed (the
  // collectives exist).
  Status submit(Result<std::unique_ptr<coll::CollTask>> task, std::shared_ptr<Request>* request_p);
  // Records a fatal error: the communicator refuses further collectives.
  Status fail(Status status);

  const int rank_;
  const int nranks_;
  const Config config_;
  Logger log_;
  Placements placements_;
  // Declared in creation order; the destructor stops the engine, then closes the transport (which
  // completes what a failed collective left posted) before the collectives' staging and completions go.
  std::unique_ptr<transport::Transport> transport_;
  std::unique_ptr<coll::Collectives> collectives_;
  std::unique_ptr<CollEngine> engine_;
  // Held shared by the calls other threads may make while the posting thread finalizes (abort, test, wait),
  // exclusively by finalize() while it frees the engine.
  mutable std::shared_mutex engine_lifetime_;
  State state_ = State::kActive;
  Status failure_;
};

}  // namespace psdp::core
