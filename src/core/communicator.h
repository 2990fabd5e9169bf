// A communicator: a team of ranks over a context (core/context.h: the transport and the progress driver it
// shares with the other teams of this process), with its own collectives and task queue. psdp_comm_init
// makes a context and its first team; splits make teams on the parent's context. The C API (src/api) holds
// one per psdp_comm_h.
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <vector>

#include "base/config.h"
#include "base/deadline.h"
#include "base/log.h"
#include "base/status.h"
#include "coll/collectives.h"
#include "coll/task_queue.h"
#include "core/bootstrap.h"
#include "core/context.h"
#include "core/rank_placement.h"
#include "core/rendezvous_id.h"
#include "core/tuning.h"
#include "transport/team_transport.h"

namespace psdp::core {

using coll::Request;
using coll::WaitResult;

// Memory kinds a communicator's collectives may be asked for: PSDP_MEMORY_HOST and PSDP_MEMORY_CUDA.
inline constexpr size_t kMemoryKinds = 2;

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
  // The engine rule of the tuning file's section that applies to this communicator (core/tuning.h) for
  // plans of `chunk_bytes` chunks, or null: no file, no section for this interconnect, or no such rule.
  const tune::EngineRule* tunedEngineRule(uint64_t chunk_bytes) const {
    return tuned_section_ != nullptr ? tuned_section_->findEngine(nranks_, chunk_bytes) : nullptr;
  }
  // "/etc/psdp/tuning (the search path)", or "no tuning file".
  std::string tuningFile() const { return tuning_.describe(); }
  // The signature of this team's interconnect, as a tuning file's sections are matched against it: every
  // member all-gathers the transports of its lanes to the others, and all of them take the union, so every
  // rank computes the same one. Collective (two small all-gathers). Errors: the all-gathers'.
  Result<tune::InterconnectSignature> interconnectSignature();

  // Collectives. Arguments have been validated by the caller. Each is posted to the team's task queue by the
  // provider of its buffers' memory kind (coll/provider.h; unsupported where this build has none); `request_p`
  // NULL: the call then waits for it (blocking), otherwise *request_p receives the request. A timeout or a
  // remote error fails the communicator: every later call returns that error again. One thread at a time
  // posts on a communicator (ranks must agree on the order of collectives anyway).
  Status reduceScatter(const void* sendbuf, void* recvbuf, size_t recvcount, psdp_dtype_t dtype, psdp_op_t op,
                       std::shared_ptr<Request>* request_p = nullptr, psdp_memory_kind_t memory = PSDP_MEMORY_HOST);
  Status allGather(const void* sendbuf, void* recvbuf, size_t sendcount, psdp_dtype_t dtype,
                   std::shared_ptr<Request>* request_p = nullptr, psdp_memory_kind_t memory = PSDP_MEMORY_HOST);
  Status allReduce(const void* sendbuf, void* recvbuf, size_t count, psdp_dtype_t dtype, psdp_op_t op,
                   std::shared_ptr<Request>* request_p = nullptr, psdp_memory_kind_t memory = PSDP_MEMORY_HOST);
  Status broadcast(const void* sendbuf, void* recvbuf, size_t count, psdp_dtype_t dtype, int root,
                   std::shared_ptr<Request>* request_p = nullptr, psdp_memory_kind_t memory = PSDP_MEMORY_HOST);
  Status barrier(std::shared_ptr<Request>* request_p = nullptr);
  // Any other call of the provider's Collectives (reduce, gather, scatter, all-to-all, the -v forms, send and
  // recv): `post(collectives)` makes its task, under the same rules as the calls above. `what` names the call.
  template <typename Post>
  Status post(const char* what, psdp_memory_kind_t memory, std::shared_ptr<Request>* request_p, Post&& post) {
    PSDP_RETURN_IF_ERROR(checkUsable(what));
    PSDP_ASSIGN_OR_RETURN(coll::Collectives * collectives, collectivesFor(memory, what));
    return submit(post(*collectives), request_p);
  }

  // psdp_comm_after: the operations posted after this start once `awaited` has completed; its failure
  // fails this communicator. `context`: the awaited request's communicator's (null once that is gone and
  // the request complete). Errors: invalid argument for a request of another context.
  Status after(std::shared_ptr<Request> awaited, const Context* context);

  // Requests of this communicator's collectives. Thread-safe. test: never blocks, true once done.
  // wait: false when `until` passed first (the request stays valid); the communicator's timeout applies to
  // each operation independently of `until`.
  bool test(Request& request);
  bool wait(Request& request, const Deadline& until);
  // psdp_request_wait_all: waits for requests[i] of comms[i] (the same length), those of communicators
  // sharing a context as one wait (ProgressDriver::waitAll), the contexts in order of first appearance.
  // False when `until` passed first. Thread-safe as wait().
  static bool waitAll(std::span<Communicator* const> comms, std::span<Request* const> requests, const Deadline& until);

  // Collective over this communicator: ranks with the same color (>= 0) form a new communicator ordered by
  // (key, rank here); color PSDP_SPLIT_NOCOLOR yields nullptr. The new one is a team on this one's context
  // (no new thread, worker or endpoint) with an id its members agree on; where any rank's config asks for
  // split_share = 0, or a progress mode other than this context's, every new team gets a context of its
  // own instead (a new UCX worker, wired up through this communicator's all-gathers). Either way the two
  // may be used concurrently and destroyed in any order, and a failure of one leaves the other alone unless
  // it shares the failed rank. config nullptr: this communicator's. Blocks up to the timeout; errors fail
  // this communicator as a collective would (except invalid argument, decided locally).
  Result<std::unique_ptr<Communicator>> split(int color, int key, const Config* config);

  // The two teams of the rank layout for shard groups of group_size (placements().layout): this rank's shard
  // group, where member g of group k is rank g, and its replica group, where replica k is rank k. Collective
  // over this communicator, as two splits; group_size is checked first, alike on every rank.
  struct LayoutTeams {
    std::unique_ptr<Communicator> shard;
    std::unique_ptr<Communicator> replica;
  };
  Result<LayoutTeams> splitLayout(int group_size, const Config* config);

  // Waits for every rank (barrier), then leaves the context; the last team of a context flushes and closes
  // its transport. Only destruction may follow.
  Status finalize();

  // psdp_comm_abort: fails this team with an aborted status (its members are told; other teams of the
  // context go on); whoever drives the operations then completes them with it. Thread-safe, also against a
  // blocked collective of this communicator; not against destruction. A no-op after finalize().
  void abort();

  // Whether `what` (a collective, or anything else that talks to the peers) may run now: invalid usage once
  // finalized, the recorded error once failed or aborted.
  Status checkUsable(const char* what) const;

  // Where the ranks run (gathered at init; a split communicator keeps its members' part): the mapping and
  // the rank layout for any shard group size. Immutable after creation, so any thread may read it.
  const Placements& placements() const { return placements_; }

  // This communicator's premul-sum ops (thread-safe table), its host collectives'; null once finalized.
  coll::CustomOps* customOps() {
    coll::Collectives* host = collectives_[PSDP_MEMORY_HOST].get();
    return host != nullptr ? &host->customOps() : nullptr;
  }

  // What the chunk engine posts on when this communicator is one of a registered state's teams (engine/team.h):
  // its host collectives and its task queue; null once finalized.
  coll::Collectives* hostCollectives() { return collectives_[PSDP_MEMORY_HOST].get(); }
  coll::TaskQueue* taskQueue() { return queue_.get(); }

  // The context it is a team of, shared with the teams split from it. Tests count its threads by it.
  const Context& context() const { return *context_; }

 private:
  enum class State { kActive, kFailed, kFinalized };

  Communicator(int rank, int nranks, Config config, Logger log);
  Status connect(const RendezvousId& id, const Deadline& deadline);
  // Keeps the gathered descriptors and computes the mapping; logs this rank's placement.
  Status adoptPlacements(Result<Placements> placements);
  // Becomes team `team_id` of `context` over its transport ranks `members` (this rank is rank_ of them):
  // prepares the team's transport view, collectives (their built-in rules for hostLaneTraits()) and task
  // queue, then applies the tuning file.
  Status joinContext(std::shared_ptr<Context> context, uint64_t team_id, std::vector<int> members);
  // What this rank's lanes to the other processes of its host say of the interconnect (core/tuning.h): the
  // ring copies once where every one of them has a single-copy transport. Local, no message: where ranks
  // see it differently, the direct offers still settle each call alike (coll/direct_offer.h).
  coll::InterconnectTraits hostLaneTraits() const;
  // Agrees the team's interconnect signature with its members (one all-gather of each one's lanes) and
  // gives the host collectives the table with the section that covers it (and the built-in rules for
  // `traits`); logs which section applies, or why none does. Collective over the team; nothing to do
  // without a tuning file.
  Status applyTuning(coll::InterconnectTraits traits);
  // Every member's bytes, in team rank order: the lengths, then the bytes padded to the longest.
  Result<std::vector<std::vector<std::byte>>> allGatherBytes(std::span<const std::byte> mine);
  // Leaves the context (clean: finalized); the last team out closes the transport.
  Status leaveContext(bool clean, const Deadline& deadline);
  // split()'s new team: on this context (shared) or on a new one wired up through this communicator.
  Status shareContext(Communicator& child, const std::vector<int>& members, uint64_t team_id);
  // The collectives of `memory`, for a call `what`. Errors: unsupported (no provider of this build serves
  // that memory kind).
  Result<coll::Collectives*> collectivesFor(psdp_memory_kind_t memory, const char* what);
  // Queues a posted task; waits for it when request_p is NULL. REQUIRES: checkUsable() passed (the
  // collectives exist).
  Status submit(Result<std::unique_ptr<coll::CollTask>> task, std::shared_ptr<Request>* request_p);
  // Records a fatal error: the communicator refuses further collectives.
  Status fail(Status status);

  const int rank_;
  const int nranks_;
  const Config config_;
  Logger log_;
  LoadedTuning tuning_;  // read at init, or for a split from the config given to it (core/tuning.h)
  const tune::TuningSection* tuned_section_ = nullptr;  // of tuning_.file: the one that applies, if any
  Placements placements_;
  // Declared in creation order. The destructor fails the team first unless it finalized (which completes
  // what a failed or abandoned collective left posted), then frees the queue, the collectives' staging and
  // completions, the view, and last its hold on the context.
  std::shared_ptr<Context> context_;
  std::unique_ptr<transport::TeamTransport> team_;
  // Per memory kind (index psdp_memory_kind_t): made by the provider of that kind, null where this build has
  // none.
  std::array<std::unique_ptr<coll::Collectives>, kMemoryKinds> collectives_;
  std::unique_ptr<coll::TaskQueue> queue_;
  bool joined_ = false;  // the context counts this team
  // Held shared by the calls other threads may make while the posting thread finalizes (abort, test, wait),
  // exclusively by finalize() while it frees the queue.
  mutable std::shared_mutex queue_lifetime_;
  State state_ = State::kActive;
  Status failure_;
};

}  // namespace psdp::core
