#include "core/communicator.h"

#include <unistd.h>

#include "topo/numa_binding.h"
#include "transport/registry.h"

namespace psdp::core {

Communicator::Communicator(int rank, int nranks, Config config, Logger log)
    : rank_(rank), nranks_(nranks), config_(std::move(config)), log_(std::move(log)) {}

Communicator::~Communicator() {
  // The engine first: it stops its thread and completes queued requests. A failed collective may have left
  // transfers posted on the collectives' completions and staging; the transport's destructor aborts them
  // (and closes endpoints when finalize() did not), so it goes before the collectives.
  engine_.reset();
  transport_.reset();
  collectives_.reset();
}

Result<std::unique_ptr<Communicator>> Communicator::create(int nranks, const RendezvousId& id, int rank,
                                                           const Config& config, std::unique_ptr<RootServer> root) {
  PSDP_ASSIGN_OR_RETURN(Logger log, makeRankLogger(rank, config));
  std::unique_ptr<Communicator> comm(new Communicator(rank, nranks, config, std::move(log)));
  Deadline deadline = Deadline::after(config.timeout_s);
  Status status = comm->connect(id, deadline);
  // The root serves only the rendezvous, which connect() has completed (or given up on).
  root.reset();
  if (!status.isOk()) {
    comm->log_->error("init failed: {}", status.toString());
    return status;
  }
  return comm;
}

Status Communicator::connect(const RendezvousId& id, const Deadline& deadline) {
  // A rank that cannot describe itself still joins the rendezvous (so the others fail at once), then fails.
  Result<topo::RankDescriptor> self = describeThisRank(config_, log_);
  PSDP_RETURN_IF_ERROR(createTransport());
  PSDP_ASSIGN_OR_RETURN(std::vector<std::byte> address, transport_->localAddress());
  log_->debug("rendezvous at {} as rank {} of {}", id.address(), rank_, nranks_);
  std::vector<std::byte> payload = self.isOk() ? packRankPayload(address, self.value()) : rejectedRankPayload();
  PSDP_ASSIGN_OR_RETURN(auto payloads, exchangeViaRoot(id, rank_, nranks_, payload, config_, deadline, log_));
  PSDP_RETURN_IF_ERROR(self.status());
  std::vector<std::vector<std::byte>> addresses;
  std::vector<topo::RankDescriptor> descriptors;
  for (int r = 0; r < nranks_; ++r) {
    PSDP_ASSIGN_OR_RETURN(RankPayload unpacked, unpackRankPayload(payloads[r], r));
    addresses.push_back(std::move(unpacked.address));
    descriptors.push_back(std::move(unpacked.descriptor));
  }
  PSDP_RETURN_IF_ERROR(adoptPlacements(Placements::create(std::move(descriptors))));
  // The transport's and the engine's progress threads start in connectPeers and inherit this thread's
  // binding, and the staging memory is first touched there: all of them land on the rank's NUMA node.
  topo::ScopedNumaBinding binding(placements_.placement(rank_).numa_node);
  log_->debug("NUMA binding of the progress threads and staging: {}", binding.outcome());
  return connectPeers(addresses, deadline);
}

Status Communicator::adoptPlacements(Result<Placements> placements) {
  PSDP_RETURN_IF_ERROR(placements.status());
  placements_ = std::move(placements).value();
  const topo::RankMapping& mapping = placements_.mapping();
  const topo::RankPlacement& mine = placements_.placement(rank_);
  log_->info("placement: host {} ({} of {} hosts), ring position {}, NUMA node {}, NIC {}", mapping.hosts[mine.host],
             mine.host + 1, mapping.hosts.size(), placements_.ringPosition(rank_), mine.numa_node,
             mine.nic.empty() ? "none" : fmt::format("{} ({})", mine.nic, topo::pathClassName(mine.nic_path)));
  for (const std::string& note : mapping.notes) log_->info("placement: {}", note);
  return Status::ok();
}

Status Communicator::createTransport() {
  // With PSDP_PROGRESS=thread the transport keeps its own progress thread even though the engine has one:
  // the transport's thread keeps progressing UCX between collectives (sleeping on the worker's event fd),
  // which rendezvous protocols need after the local side of an operation has completed (a CMA read's
  // acknowledgement to the sender), and the engine thread then sleeps on the transport's event counter.
  transport::TransportParams params{rank_, nranks_, config_.progress_mode, log_};
  PSDP_ASSIGN_OR_RETURN(transport_, transport::createHostTransport(params));
  return Status::ok();
}

Status Communicator::connectPeers(const std::vector<std::vector<std::byte>>& addresses, const Deadline& deadline) {
  PSDP_RETURN_IF_ERROR(transport_->connect(addresses, deadline));
  coll::CollParams coll_params{rank_, nranks_, config_.chunk_bytes, /*context_id=*/0, log_};
  coll_params.algorithm = config_.algorithm;
  coll_params.deterministic = config_.deterministic;
  coll_params.single_host = placements_.mapping().hosts.size() == 1;
  // The engine queues at most max_in_flight; one more is made before its post waits for room.
  coll_params.max_tasks = config_.max_in_flight + 1;
  PSDP_ASSIGN_OR_RETURN(collectives_, coll::Collectives::create(*transport_, coll_params));
  bool background = config_.progress_mode == PSDP_PROGRESS_THREAD;
  engine_ = std::make_unique<CollEngine>(*transport_, background, config_.timeout_s, config_.max_in_flight, log_);
  log_->info("communicator ready: rank {} of {}, transport {}, pid {}", rank_, nranks_, transport_->name(), getpid());
  return Status::ok();
}

Status Communicator::checkUsable(const char* what) const {
  switch (state_) {
    case State::kActive: {
      Status engine_failure = engine_->failure();
      if (engine_failure.isOk()) return Status::ok();
      return engine_failure.withContext(fmt::format("{}: the communicator failed earlier", what));
    }
    case State::kFinalized: return Status::invalidUsage("{}: the communicator is finalized", what);
    case State::kFailed: return failure_.withContext(fmt::format("{}: the communicator failed earlier", what));
  }
  return Status::internal("{}: unknown communicator state", what);
}

Status Communicator::fail(Status status) {
  if (status.isOk()) return status;
  // Invalid arguments and usage errors leave the communicator usable; everything else means a peer or the
  // transport is in an unknown state.
  psdp_status_t code = status.code();
  if (code == PSDP_ERR_INVALID_ARGUMENT || code == PSDP_ERR_INVALID_USAGE || code == PSDP_ERR_UNSUPPORTED) {
    return status;
  }
  if (state_ == State::kActive) {
    state_ = State::kFailed;
    failure_ = status;
    log_->error("communicator failed: {}", status.toString());
  }
  return status;
}

Status Communicator::submit(Result<std::unique_ptr<coll::CollTask>> task, std::shared_ptr<Request>* request_p) {
  if (!task.isOk()) return fail(task.status());
  PSDP_ASSIGN_OR_RETURN(std::shared_ptr<Request> request,
                        engine_->post(std::move(task).value(), /*wake_thread=*/request_p != nullptr));
  if (request_p != nullptr) {
    *request_p = std::move(request);
    return Status::ok();
  }
  engine_->wait(*request, Deadline::never());
  return fail(request->status());
}

Status Communicator::reduceScatter(const void* sendbuf, void* recvbuf, size_t recvcount, psdp_dtype_t dtype,
                                   psdp_op_t op, std::shared_ptr<Request>* request_p) {
  PSDP_RETURN_IF_ERROR(checkUsable("reduce-scatter"));
  return submit(collectives_->postReduceScatter(sendbuf, recvbuf, recvcount, dtype, op), request_p);
}

Status Communicator::allGather(const void* sendbuf, void* recvbuf, size_t sendcount, psdp_dtype_t dtype,
                               std::shared_ptr<Request>* request_p) {
  PSDP_RETURN_IF_ERROR(checkUsable("all-gather"));
  return submit(collectives_->postAllGather(sendbuf, recvbuf, sendcount, dtype), request_p);
}

Status Communicator::allReduce(const void* sendbuf, void* recvbuf, size_t count, psdp_dtype_t dtype, psdp_op_t op,
                               std::shared_ptr<Request>* request_p) {
  PSDP_RETURN_IF_ERROR(checkUsable("all-reduce"));
  return submit(collectives_->postAllReduce(sendbuf, recvbuf, count, dtype, op), request_p);
}

Status Communicator::broadcast(const void* sendbuf, void* recvbuf, size_t count, psdp_dtype_t dtype, int root,
                               std::shared_ptr<Request>* request_p) {
  PSDP_RETURN_IF_ERROR(checkUsable("broadcast"));
  return submit(collectives_->postBroadcast(sendbuf, recvbuf, count, dtype, root), request_p);
}

Status Communicator::barrier(std::shared_ptr<Request>* request_p) {
  PSDP_RETURN_IF_ERROR(checkUsable("barrier"));
  return submit(collectives_->postBarrier(), request_p);
}

void Communicator::abort() {
  // Only the engine and the transport are touched: both are thread-safe, while state_ belongs to the
  // thread making calls, which learns of the abort from the engine (checkUsable, or its operation's status).
  std::shared_lock lifetime(engine_lifetime_);
  if (!engine_) return;
  engine_->abort(Status::aborted("rank {} aborted the communicator (psdp_comm_abort)", rank_));
}

// Once finalize() has freed the engine every request is done: finalize's barrier ran behind them.
bool Communicator::test(Request& request) {
  std::shared_lock lifetime(engine_lifetime_);
  return engine_ ? engine_->test(request) : request.isDone();
}

bool Communicator::wait(Request& request, const Deadline& until) {
  std::shared_lock lifetime(engine_lifetime_);
  return engine_ ? engine_->wait(request, until) == WaitResult::kDone : request.isDone();
}

Status Communicator::finalize() {
  PSDP_RETURN_IF_ERROR(checkUsable("finalize"));
  // The barrier makes sure no peer still expects data from us before our endpoints close; queued behind
  // any request still outstanding, it also lets those complete first.
  PSDP_RETURN_IF_ERROR(barrier());
  Deadline deadline = Deadline::after(config_.timeout_s);
  {
    std::unique_lock lifetime(engine_lifetime_);
    engine_.reset();
  }
  collectives_.reset();
  Status closed = transport_->close(deadline);
  state_ = State::kFinalized;
  if (!closed.isOk()) log_->warn("finalize: {}", closed.toString());
  return closed;
}

}  // namespace psdp::core
