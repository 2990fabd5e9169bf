#include "core/communicator.h"

#include <unistd.h>

#include "transport/registry.h"

namespace psdp::core {

Communicator::Communicator(int rank, int nranks, Config config, Logger log)
    : rank_(rank), nranks_(nranks), config_(std::move(config)), log_(std::move(log)) {}

Communicator::~Communicator() {
  // Collectives hold no transport operation between calls, so they can go first; the transport's own
  // destructor closes endpoints and stops its thread when finalize() did not.
  collectives_.reset();
  transport_.reset();
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
  transport::TransportParams params{rank_, nranks_, config_.progress_mode, log_};
  PSDP_ASSIGN_OR_RETURN(transport_, transport::createHostTransport(params));
  PSDP_ASSIGN_OR_RETURN(std::vector<std::byte> address, transport_->localAddress());
  log_->debug("rendezvous at {} as rank {} of {}", id.address(), rank_, nranks_);
  PSDP_ASSIGN_OR_RETURN(auto addresses, exchangeViaRoot(id, rank_, nranks_, address, config_, deadline, log_));
  PSDP_RETURN_IF_ERROR(transport_->connect(addresses, deadline));
  coll::CollParams coll_params{rank_, nranks_, config_.chunk_bytes, /*context_id=*/0, log_};
  PSDP_ASSIGN_OR_RETURN(collectives_, coll::Collectives::create(*transport_, coll_params));
  log_->info("communicator ready: rank {} of {}, transport {}, pid {}", rank_, nranks_, transport_->name(), getpid());
  return Status::ok();
}

Status Communicator::checkUsable(const char* what) const {
  switch (state_) {
    case State::kActive: return Status::ok();
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

Status Communicator::reduceScatter(const void* sendbuf, void* recvbuf, size_t recvcount, psdp_dtype_t dtype,
                                   psdp_op_t op) {
  PSDP_RETURN_IF_ERROR(checkUsable("reduce-scatter"));
  Deadline deadline = Deadline::after(config_.timeout_s);
  return fail(collectives_->reduceScatter(sendbuf, recvbuf, recvcount, dtype, op, deadline));
}

Status Communicator::allGather(const void* sendbuf, void* recvbuf, size_t sendcount, psdp_dtype_t dtype) {
  PSDP_RETURN_IF_ERROR(checkUsable("all-gather"));
  Deadline deadline = Deadline::after(config_.timeout_s);
  return fail(collectives_->allGather(sendbuf, recvbuf, sendcount, dtype, deadline));
}

Status Communicator::allReduce(const void* sendbuf, void* recvbuf, size_t count, psdp_dtype_t dtype, psdp_op_t op) {
  PSDP_RETURN_IF_ERROR(checkUsable("all-reduce"));
  Deadline deadline = Deadline::after(config_.timeout_s);
  return fail(collectives_->allReduce(sendbuf, recvbuf, count, dtype, op, deadline));
}

Status Communicator::finalize() {
  PSDP_RETURN_IF_ERROR(checkUsable("finalize"));
  Deadline deadline = Deadline::after(config_.timeout_s);
  // The barrier makes sure no peer still expects data from us before our endpoints close.
  PSDP_RETURN_IF_ERROR(fail(collectives_->barrier(deadline)));
  collectives_.reset();
  Status closed = transport_->close(deadline);
  state_ = State::kFinalized;
  if (!closed.isOk()) log_->warn("finalize: {}", closed.toString());
  return closed;
}

}  // namespace psdp::core
