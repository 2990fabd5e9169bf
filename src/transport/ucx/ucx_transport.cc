#include "transport/ucx/ucx_transport.h"

#include <ucp/api/ucp.h>

#include <atomic>
#include <utility>

#include "transport/ucx/ucx_context.h"
#include "transport/ucx/ucx_endpoint.h"
#include "transport/ucx/ucx_event_counter.h"
#include "transport/ucx/ucx_pending_op.h"
#include "transport/ucx/ucx_progress_thread.h"
#include "transport/ucx/ucx_status.h"
#include "transport/ucx/ucx_worker_loop.h"

namespace psdp::transport::ucx {
namespace {

// The wire tag puts the sender's rank above the caller's 40 bits; receivers match all 64 bits, so a recv
// from `peer` only ever matches that peer's messages.
constexpr int kMaxRanks = 1 << (64 - kTagBits);
constexpr ucp_tag_t kFullTagMask = ~ucp_tag_t{0};
constexpr Tag kWireupTag = kReservedTagBit;
// The destructor's forced shutdown of a transport that was never closed.
constexpr double kAbortSeconds = 2.0;
// PendingOps preallocated per transport (and per growth step): enough for a window of chunks to every peer.
constexpr size_t kOpSlab = 256;

ucp_tag_t wireTag(int sender, Tag tag) {
  return (static_cast<ucp_tag_t>(sender) << kTagBits) | tag;
}

const char* progressModeName(psdp_progress_mode_t mode) {
  return mode == PSDP_PROGRESS_THREAD ? "thread" : "caller";
}

class UcxTransport final : public Transport {
 public:
  static Result<std::unique_ptr<Transport>> create(const TransportParams& params, const UcxOptions& options);
  ~UcxTransport() override;

  const char* name() const override { return "ucx"; }
  Capabilities capabilities() const override { return Capabilities{.host_memory = true, .cuda_memory = false}; }
  Result<std::vector<std::byte>> localAddress() override;
  Status connect(const std::vector<std::vector<std::byte>>& addresses, const Deadline& deadline) override;
  Status send(int peer, Tag tag, const void* buf, size_t bytes, Completion* completion) override;
  Status recv(int peer, Tag tag, void* buf, size_t bytes, Completion* completion) override;
  uint32_t eventCount() const override { return events_.value(); }
  Status waitEvents(uint32_t seen, const Deadline& deadline) override;
  Status close(const Deadline& deadline) override;

 private:
  enum class State { kCreating, kCreated, kConnected, kClosed };

  // Everything psdp knows about one peer. The error callback may run on UCX's async thread, so what it
  // writes is atomic; the rest is guarded by the worker lock.
  struct Peer {
    UcxTransport* owner = nullptr;
    UcxEndpoint ep;
    PendingList pending;
    std::atomic<bool> failed{false};
    std::atomic<int> failure{UCS_OK};  // the ucs_status_t UCX reported
    bool failure_handled = false;
  };

  explicit UcxTransport(const TransportParams& params);
  Status init(const UcxOptions& options);

  Status checkPost(int peer, Tag tag, const void* buf, size_t bytes, const Completion* completion) const;
  Status postSend(int peer, Tag tag, const void* buf, size_t bytes, Completion* completion);
  Status postRecv(int peer, Tag tag, void* buf, size_t bytes, Completion* completion);
  PendingOp* beginOp(int peer, Tag tag, size_t bytes, bool is_recv, Completion* completion);
  Status endPost(PendingOp* op, ucs_status_ptr_t result);
  ucp_request_param_t opParam(PendingOp* op) const;
  void complete(PendingOp* op, ucs_status_t status, size_t length);
  void retire(PendingOp* op);
  void onDone(PendingOp* op, void* request, ucs_status_t status, size_t length);
  Status opStatus(const PendingOp& op, ucs_status_t status, size_t length) const;
  Status peerFailedStatus(int peer) const;

  static void onSendDone(void* request, ucs_status_t status, void* user_data);
  static void onRecvDone(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info, void* user_data);
  static void onPeerError(void* arg, ucp_ep_h ep, ucs_status_t status);

  void afterProgress();
  void handleFailures();
  void cancelRecvs(Peer& peer);

  Status exchangeWireup(const Deadline& deadline);
  void logLanes();
  Status shutdown(bool force, const Deadline& deadline);
  void detachLeftovers();

  const int rank_;
  const int nranks_;
  const psdp_progress_mode_t mode_;
  Logger log_;
  State state_ = State::kCreating;
  // Before the worker: a callback UCX runs while destroying the worker may still reach an op.
  OpPool ops_{kOpSlab};
  // Declared in creation order, so that a half-created transport is torn down in reverse.
  UcpContext context_;
  UcpWorker worker_;
  std::vector<std::byte> address_;
  EventCounter events_;
  std::unique_ptr<WorkerLoop> loop_;
  std::unique_ptr<Peer[]> peers_;
  std::atomic<bool> failure_pending_{false};
  // connect()'s exchange: recvs then sends, one per rank. Members, so that a wire-up abandoned at its
  // deadline still has somewhere to complete.
  std::unique_ptr<Completion[]> wireup_;
  std::unique_ptr<ProgressThread> progress_thread_;
};

// ---- creation -------------------------------------------------------------------------------------------

Result<std::unique_ptr<Transport>> UcxTransport::create(const TransportParams& params, const UcxOptions& options) {
  if (params.nranks < 1 || params.nranks > kMaxRanks || params.rank < 0 || params.rank >= params.nranks) {
    return Status::invalidArgument("ucx transport: rank {} of {} ranks (at most {})", params.rank, params.nranks,
                                   kMaxRanks);
  }
  if (params.progress_mode != PSDP_PROGRESS_THREAD && params.progress_mode != PSDP_PROGRESS_CALLER) {
    return Status::invalidArgument("ucx transport: unknown progress mode {}", static_cast<int>(params.progress_mode));
  }
  std::unique_ptr<UcxTransport> transport(new UcxTransport(params));
  PSDP_RETURN_IF_ERROR(transport->init(options));
  return std::unique_ptr<Transport>(std::move(transport));
}

UcxTransport::UcxTransport(const TransportParams& params)
    : rank_(params.rank),
      nranks_(params.nranks),
      mode_(params.progress_mode),
      // Without a logger of the communicator, log through the process logger (aliasing, no ownership).
      log_(params.log ? params.log : Logger(Logger(), &processLog())) {}

Status UcxTransport::init(const UcxOptions& options) {
  ContextSpec spec;
  spec.estimated_num_eps = nranks_;
  spec.overrides = options.ucx_config;
  spec.env = options.env ? options.env : &ProcessEnvironment::instance();
  spec.cma_rendezvous = mode_ == PSDP_PROGRESS_THREAD;
  PSDP_ASSIGN_OR_RETURN(context_, createUcpContext(spec, *log_));
  // SERIALIZED, not MULTI: WorkerLoop serialises every call under its own lock (see ucx_worker_loop.h).
  PSDP_ASSIGN_OR_RETURN(worker_, createUcpWorker(context_.get(), UCS_THREAD_MODE_SERIALIZED));
  PSDP_ASSIGN_OR_RETURN(address_, workerAddress(worker_.get()));
  PSDP_ASSIGN_OR_RETURN(loop_, WorkerLoop::create(worker_.get(), [this] { afterProgress(); }));
  peers_ = std::make_unique<Peer[]>(static_cast<size_t>(nranks_));
  for (int r = 0; r < nranks_; ++r) peers_[r].owner = this;
  if (mode_ == PSDP_PROGRESS_THREAD) progress_thread_ = std::make_unique<ProgressThread>(*loop_);
  state_ = State::kCreated;
  log_->debug("ucx transport created, {} ranks, progress {}, address {} bytes", nranks_, progressModeName(mode_),
              address_.size());
  return Status::ok();
}

Result<std::vector<std::byte>> UcxTransport::localAddress() {
  if (state_ == State::kClosed) return Status::invalidUsage("ucx transport is closed");
  return address_;
}

// ---- connect --------------------------------------------------------------------------------------------

Status UcxTransport::connect(const std::vector<std::vector<std::byte>>& addresses, const Deadline& deadline) {
  if (state_ != State::kCreated) return Status::invalidUsage("ucx transport: connect called twice or after close");
  if (addresses.size() != static_cast<size_t>(nranks_)) {
    return Status::invalidArgument("ucx transport: {} addresses for {} ranks", addresses.size(), nranks_);
  }
  {
    auto lock = loop_->lockForPost();
    for (int r = 0; r < nranks_; ++r) {
      if (addresses[r].empty()) return Status::invalidArgument("ucx transport: empty address of rank {}", r);
      PSDP_ASSIGN_OR_RETURN(peers_[r].ep,
                            UcxEndpoint::create(worker_.get(), addresses[r], r, &onPeerError, &peers_[r], log_));
    }
  }
  state_ = State::kConnected;
  PSDP_RETURN_IF_ERROR(exchangeWireup(deadline));
  logLanes();
  return Status::ok();
}

// UCX wires up endpoints lazily; a message each way completes the handshake (and with it peer error
// handling) before the first collective, and proves every rank reachable within the deadline.
Status UcxTransport::exchangeWireup(const Deadline& deadline) {
  wireup_ = std::make_unique<Completion[]>(2 * static_cast<size_t>(nranks_));
  for (int r = 0; r < nranks_; ++r) {
    PSDP_RETURN_IF_ERROR(postRecv(r, kWireupTag, nullptr, 0, &wireup_[r]));
  }
  for (int r = 0; r < nranks_; ++r) {
    PSDP_RETURN_IF_ERROR(postSend(r, kWireupTag, nullptr, 0, &wireup_[nranks_ + r]));
  }
  for (int i = 0; i < 2 * nranks_; ++i) {
    Status status = waitFor(*this, wireup_[i], deadline);
    if (!status.isOk()) {
      log_->error("wire-up with peer {} failed: {}", i % nranks_, status.toString());
      return status.withContext(fmt::format("wire-up with peer {}", i % nranks_));
    }
  }
  return Status::ok();
}

void UcxTransport::logLanes() {
  if (!log_->should_log(spdlog::level::info)) return;
  auto lock = loop_->lockForPost();
  for (int r = 0; r < nranks_; ++r) log_->info("peer {} lanes {}", r, peers_[r].ep.laneSummary());
}

// ---- posting --------------------------------------------------------------------------------------------

Status UcxTransport::checkPost(int peer, Tag tag, const void* buf, size_t bytes, const Completion* completion) const {
  if (state_ != State::kConnected) return Status::invalidUsage("ucx transport: not connected");
  if (peer < 0 || peer >= nranks_) return Status::invalidArgument("peer {} out of range [0, {})", peer, nranks_);
  if ((tag & ~kTagMask) != 0 || (tag & kReservedTagBit) != 0) {
    return Status::invalidArgument("tag {:#x} outside the caller's tag space", tag);
  }
  if (buf == nullptr && bytes > 0) return Status::invalidArgument("null buffer of {} bytes", bytes);
  if (completion == nullptr) return Status::invalidArgument("null completion");
  return Status::ok();
}

Status UcxTransport::send(int peer, Tag tag, const void* buf, size_t bytes, Completion* completion) {
  PSDP_RETURN_IF_ERROR(checkPost(peer, tag, buf, bytes, completion));
  return postSend(peer, tag, buf, bytes, completion);
}

Status UcxTransport::recv(int peer, Tag tag, void* buf, size_t bytes, Completion* completion) {
  PSDP_RETURN_IF_ERROR(checkPost(peer, tag, buf, bytes, completion));
  return postRecv(peer, tag, buf, bytes, completion);
}

ucp_request_param_t UcxTransport::opParam(PendingOp* op) const {
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMORY_TYPE;
  param.user_data = op;
  param.memory_type = UCS_MEMORY_TYPE_HOST;  // host memory only: spares UCX a memory-type lookup per message
  return param;
}

// The op is complete and linked before UCX sees it, so a callback may run at any time from here on.
PendingOp* UcxTransport::beginOp(int peer, Tag tag, size_t bytes, bool is_recv, Completion* completion) {
  PendingOp* op = ops_.acquire();
  op->owner = this;
  op->completion = completion;
  op->tag = tag;
  op->bytes = bytes;
  op->peer = peer;
  op->is_recv = is_recv;
  peers_[peer].pending.pushBack(op);
  loop_->opStarted();
  return op;
}

// After the UCX call, under the same lock. A request whose callback already ran (inside the call) is freed
// here; an error means nothing was posted and the caller's completion stays untouched.
Status UcxTransport::endPost(PendingOp* op, ucs_status_ptr_t result) {
  // Completions written inside the post call have no progress hook after them to wake waiters.
  struct Publish {
    EventCounter& events;
    ~Publish() { events.publish(); }
  } publish{events_};
  if (UCS_PTR_IS_PTR(result)) {
    if (op->finished) {
      ucp_request_free(result);
      retire(op);
    } else {
      op->request = result;
    }
    return Status::ok();
  }
  ucs_status_t status = UCS_PTR_STATUS(result);
  if (status == UCS_OK) {
    complete(op, UCS_OK, op->bytes);
    retire(op);
    return Status::ok();
  }
  Status error = ucsStatus(status, fmt::format("{} {} bytes {} peer {}", op->is_recv ? "recv" : "send", op->bytes,
                                               op->is_recv ? "from" : "to", op->peer));
  op->completion = nullptr;
  retire(op);
  return error;
}

Status UcxTransport::postSend(int peer, Tag tag, const void* buf, size_t bytes, Completion* completion) {
  completion->reset();
  {
    auto lock = loop_->lockForPost();
    if (peers_[peer].failed.load(std::memory_order_acquire)) return peerFailedStatus(peer);
    PendingOp* op = beginOp(peer, tag, bytes, /*is_recv=*/false, completion);
    ucp_request_param_t param = opParam(op);
    param.cb.send = &onSendDone;
    PSDP_RETURN_IF_ERROR(endPost(op, ucp_tag_send_nbx(peers_[peer].ep.get(), buf, bytes, wireTag(rank_, tag), &param)));
  }
  loop_->wakeSleeper();
  return Status::ok();
}

// NO_IMM_CMPL: UCX 1.13 does not fill recv_info when a recv completes inside the call, so psdp asks for the
// callback, which reports the length, even then.
Status UcxTransport::postRecv(int peer, Tag tag, void* buf, size_t bytes, Completion* completion) {
  completion->reset();
  {
    auto lock = loop_->lockForPost();
    if (peers_[peer].failed.load(std::memory_order_acquire)) return peerFailedStatus(peer);
    PendingOp* op = beginOp(peer, tag, bytes, /*is_recv=*/true, completion);
    ucp_request_param_t param = opParam(op);
    param.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    param.cb.recv = &onRecvDone;
    PSDP_RETURN_IF_ERROR(
        endPost(op, ucp_tag_recv_nbx(worker_.get(), buf, bytes, wireTag(peer, tag), kFullTagMask, &param)));
  }
  loop_->wakeSleeper();
  return Status::ok();
}

void UcxTransport::complete(PendingOp* op, ucs_status_t status, size_t length) {
  op->finished = true;
  Completion* completion = op->completion;
  if (completion == nullptr) return;
  completion->status = opStatus(*op, status, length);
  completion->done.store(true, std::memory_order_release);
  events_.bump();
}

void UcxTransport::retire(PendingOp* op) {
  PendingList::unlink(op);
  loop_->opFinished();
  ops_.release(op);
}

// ---- completion -----------------------------------------------------------------------------------------

void UcxTransport::onSendDone(void* request, ucs_status_t status, void* user_data) {
  auto* op = static_cast<PendingOp*>(user_data);
  static_cast<UcxTransport*>(op->owner)->onDone(op, request, status, 0);
}

void UcxTransport::onRecvDone(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info, void* user_data) {
  auto* op = static_cast<PendingOp*>(user_data);
  size_t length = (status == UCS_OK && info != nullptr) ? info->length : 0;
  static_cast<UcxTransport*>(op->owner)->onDone(op, request, status, length);
}

// Runs under the worker lock (inside progress, cancel or the post call itself). Inside the post call the
// request is not yet known to psdp; endPost frees it.
void UcxTransport::onDone(PendingOp* op, void* request, ucs_status_t status, size_t length) {
  complete(op, status, length);
  if (op->request == nullptr) return;
  retire(op);
  ucp_request_free(request);
}

Status UcxTransport::opStatus(const PendingOp& op, ucs_status_t status, size_t length) const {
  const char* kind = op.is_recv ? "recv from" : "send to";
  if (status == UCS_OK) {
    if (!op.is_recv || length == op.bytes) return Status::ok();
    return Status::mismatch("recv from peer {} tag {:#x}: message of {} bytes, expected {}", op.peer, op.tag, length,
                            op.bytes);
  }
  if (peers_[op.peer].failed.load(std::memory_order_acquire)) return peerFailedStatus(op.peer);
  if (status == UCS_ERR_CANCELED)
    return Status::aborted("{} peer {} tag {:#x} canceled: transport closed", kind, op.peer, op.tag);
  log_->debug("{} peer {} tag {:#x} failed: {}", kind, op.peer, op.tag, ucs_status_string(status));
  return ucsStatus(status, fmt::format("{} peer {} tag {:#x}", kind, op.peer, op.tag));
}

Status UcxTransport::peerFailedStatus(int peer) const {
  auto status = static_cast<ucs_status_t>(peers_[peer].failure.load(std::memory_order_relaxed));
  return Status::remote("peer {} failed: {}", peer, ucs_status_string(status));
}

// ---- failures -------------------------------------------------------------------------------------------

// Only atomics here: UCX may report from its async thread, where taking the worker lock could deadlock
// against a progress call that waits for that thread. The next progress handles the failure.
void UcxTransport::onPeerError(void* arg, ucp_ep_h /*ep*/, ucs_status_t status) {
  auto* peer = static_cast<Peer*>(arg);
  peer->failure.store(status, std::memory_order_relaxed);
  peer->failed.store(true, std::memory_order_release);
  peer->owner->failure_pending_.store(true, std::memory_order_release);
  peer->owner->loop_->signal();
}

void UcxTransport::afterProgress() {
  handleFailures();
  events_.publish();
}

void UcxTransport::handleFailures() {
  if (!failure_pending_.exchange(false, std::memory_order_acq_rel)) return;
  for (int r = 0; r < nranks_; ++r) {
    Peer& peer = peers_[r];
    if (!peer.failed.load(std::memory_order_acquire) || peer.failure_handled) continue;
    peer.failure_handled = true;
    log_->warn("peer {} failed: {}", r, ucs_status_string(static_cast<ucs_status_t>(peer.failure.load())));
    cancelRecvs(peer);
  }
}

// A recv is posted on the worker, not the endpoint, so UCX does not fail it with the endpoint; canceling
// runs its callback at once, which reports the peer's failure. Sends are failed by UCX itself.
void UcxTransport::cancelRecvs(Peer& peer) {
  peer.pending.forEach([this](PendingOp* op) {
    if (op->is_recv && op->request != nullptr) ucp_request_cancel(worker_.get(), op->request);
  });
}

// ---- waiting --------------------------------------------------------------------------------------------

Status UcxTransport::waitEvents(uint32_t seen, const Deadline& deadline) {
  if (state_ == State::kClosed) return Status::invalidUsage("ucx transport is closed");
  if (progress_thread_) return events_.wait(seen, deadline);
  if (!loop_->driveUntil([&] { return events_.value() != seen; }, deadline)) {
    return Status::timeout("no transport event before the deadline");
  }
  return Status::ok();
}

// ---- shutdown -------------------------------------------------------------------------------------------

Status UcxTransport::close(const Deadline& deadline) {
  if (state_ == State::kClosed) return Status::invalidUsage("ucx transport closed twice");
  return shutdown(/*force=*/false, deadline);
}

UcxTransport::~UcxTransport() {
  if (state_ == State::kClosed || state_ == State::kCreating) return;
  log_->warn("ucx transport destroyed without close, aborting its operations");
  (void)shutdown(/*force=*/true, Deadline::after(kAbortSeconds));
}

// Stops the progress thread first, so that from here on this thread is the worker's only user and may
// progress it without the lock (UcxEndpoint::close does).
Status UcxTransport::shutdown(bool force, const Deadline& deadline) {
  progress_thread_.reset();
  Status result;
  if (loop_->outstanding() > 0) {
    log_->warn("closing with {} operations pending, canceling recvs", loop_->outstanding());
    for (int r = 0; r < nranks_; ++r) cancelRecvs(peers_[r]);
  }
  for (int r = 0; r < nranks_; ++r) {
    Peer& peer = peers_[r];
    bool failed = peer.failed.load(std::memory_order_acquire);
    Status status = peer.ep.close(force || failed, deadline);
    // A peer that closed first may reset the connection under our flush: nothing is lost that the peer
    // still wanted, since every operation has completed.
    if (status.code() == PSDP_ERR_REMOTE || failed) {
      log_->debug("endpoint to peer {} closed: {}", r, status.toString());
    } else if (!status.isOk()) {
      log_->warn("endpoint to peer {} closed: {}", r, status.toString());
      if (result.isOk()) result = status;
    }
  }
  detachLeftovers();
  state_ = State::kClosed;
  worker_.reset();
  loop_.reset();
  context_.reset();
  return result;
}

// Operations UCX still holds after every endpoint is closed (a rendezvous in flight): complete them now
// so no caller waits forever, and detach them so a late callback writes nothing.
void UcxTransport::detachLeftovers() {
  for (int r = 0; r < nranks_; ++r) {
    peers_[r].pending.forEach([this](PendingOp* op) {
      log_->warn("{} peer {} tag {:#x} still pending after close", op->is_recv ? "recv from" : "send to", op->peer,
                 op->tag);
      op->completion->status = Status::aborted("operation abandoned by close");
      op->completion->done.store(true, std::memory_order_release);
      events_.bump();
      op->completion = nullptr;
      // The op stays allocated (UCX may still call back with it) but leaves the peer's list.
      PendingList::unlink(op);
    });
  }
}

}  // namespace

Result<std::unique_ptr<Transport>> createUcxTransport(const TransportParams& params) {
  return UcxTransport::create(params, UcxOptions{});
}

Result<std::unique_ptr<Transport>> createUcxTransport(const TransportParams& params, const UcxOptions& options) {
  return UcxTransport::create(params, options);
}

}  // namespace psdp::transport::ucx
