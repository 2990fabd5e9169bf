#include "transport/ucx/ucx_transport.h"

#include <ucp/api/ucp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bitset>
#include <charconv>
#include <chrono>
#include <list>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>

#include "transport/exit_notes.h"
#include "transport/peer_liveness.h"
#include "transport/peer_memory.h"
#include "transport/process_identity.h"
#include "transport/ucx/tsan_edges.h"
#include "transport/ucx/ucx_context.h"
#include "transport/ucx/ucx_endpoint.h"
#include "transport/ucx/ucx_pending_op.h"
#include "transport/ucx/ucx_progress_thread.h"
#include "transport/ucx/ucx_status.h"
#include "transport/ucx/ucx_worker_loop.h"

namespace psdp::transport::ucx {
namespace {

// The wire tag puts the sender's rank above the caller's kTagBits (45) bits, so at most 2^19 ranks; receivers match all
// 64 bits, so a recv from `peer` only ever matches that peer's messages.
constexpr int kMaxRanks = 1 << (64 - kTagBits);
constexpr ucp_tag_t kFullTagMask = ~ucp_tag_t{0};
constexpr Tag kWireupTag = kReservedTagBit;
// What goes in front of the worker address (localAddress).
constexpr size_t kAddressPrefixBytes = ProcessIdentity::kEncodedBytes + ExitNotes::kEncodedRefBytes;
// Notices between transports: "bye" from a peer that closes normally (its process exiting afterwards is
// then no failure), "fail:<status code>:<reason>" from a peer that fail-stops, so that every rank learns the
// root cause rather than a reset connection, and "cfail:<context>:<status code>:<reason>" from a peer where
// one context (team) failed. A mismatch (ranks that called different collectives) stays a mismatch on
// every rank; any other reason is a remote error. One receive per peer is always posted, again after each
// context notice.
constexpr Tag kNoticeTag = kReservedTagBit | 1;
constexpr size_t kNoticeBytes = 512;
constexpr std::string_view kByeNotice = "bye";
constexpr std::string_view kFailNotice = "fail:";
constexpr std::string_view kContextFailNotice = "cfail:";
// "cdrain:<context>:<from>:<status code>:<reason>": a context to drain up to operation `from` (Transport::drain).
constexpr std::string_view kContextDrainNotice = "cdrain:";
// A liveness probe (probePeers) and its answer, which the peer's progress sends from readNotices.
constexpr std::string_view kProbeNotice = "probe";
constexpr std::string_view kProbeAnswerNotice = "alive";
constexpr std::string_view kReportedBy = "reported by rank ";
// How many progress calls a dead peer's messages get to arrive before its death is judged: what it sent
// before exiting is already in shared memory or a socket buffer.
constexpr int kDrainPolls = 64;
// How long a liveness probe sleeps when nothing moved.
constexpr std::chrono::microseconds kProbePause{200};
// Sends up to this size are copied into UCX's queues (eager, bcopy) rather than read by the peer when it
// matches them (rendezvous): failContext waits for them to leave.
constexpr size_t kCopiedSendBytes = 8192;
// How long a failing transport lets its notices leave before it closes the endpoints under them.
constexpr double kNoticeFlushSeconds = 0.1;
// The destructor's forced shutdown of a transport that was never closed.
constexpr double kAbortSeconds = 2.0;
// PendingOps preallocated per transport (and per growth step): enough for a window of chunks to every peer.
constexpr size_t kOpSlab = 256;
// Progress calls between two looks at the peers' pidfds (a poll() of about a microsecond): a dead peer is
// seen within a millisecond or so while spinning, at once while sleeping (the pidfds are in the poll set).
constexpr int kLivenessPolls = 1024;

ucp_tag_t wireTag(int sender, Tag tag) {
  return (static_cast<ucp_tag_t>(sender) << kTagBits) | tag;
}

// The status a peer's "fail:" or "cfail:<context>:" notice gives this rank; `text` is the rest,
// "<status code>:<reason>".
Status failNoticeStatus(int peer, std::string_view text) {
  int code = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), code);
  if (error == std::errc() && end < text.data() + text.size() && *end == ':') {
    text.remove_prefix(static_cast<size_t>(end - text.data()) + 1);
    if (code == PSDP_ERR_MISMATCH) {
      // Passed on by a rank that was told itself: the original names who found it; the context the ranks
      // in between added says nothing more.
      size_t origin = text.rfind(kReportedBy);
      if (origin != std::string_view::npos) return Status::mismatch("{}", text.substr(origin));
      return Status::mismatch("{}{}: {}", kReportedBy, peer, text);
    }
  }
  // The peer did not necessarily fail itself: it passes on what it learned, a lost rank named inside.
  return Status::remote("peer {} reported: {}", peer, text);
}

// "<context>:<rest>" -> (context, rest); nullopt when malformed.
std::optional<std::pair<ContextId, std::string_view>> splitContextNotice(std::string_view text) {
  unsigned context = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), context);
  if (error != std::errc() || end == text.data() + text.size() || *end != ':' || context > 0xffff) return std::nullopt;
  text.remove_prefix(static_cast<size_t>(end - text.data()) + 1);
  return std::make_pair(static_cast<ContextId>(context), text);
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
  std::unique_ptr<PeerMemory> openPeerMemory() const override;
  std::vector<std::string> laneTransports(int peer) const override;
  Status send(int peer, Tag tag, const void* buf, size_t bytes, Completion* completion) override;
  Status recv(int peer, Tag tag, void* buf, size_t bytes, Completion* completion) override;
  uint32_t eventCount() const override { return events_.load(std::memory_order_acquire); }
  Status waitEvents(uint32_t seen, const Deadline& deadline) override;
  void wake() override {
    events_.fetch_add(1, std::memory_order_seq_cst);
    loop_->wakeSleeper();
  }
  void beginDriving() override { loop_->beginDriving(); }
  void endDriving() override { loop_->endDriving(); }
  void fail(const Status& reason) override;
  Status failure() const override;
  void failContext(ContextId context, const std::vector<int>& peers, const Status& reason) override;
  Status contextFailure(ContextId context) const override;
  Status peerFailure(int peer) const override;
  bool peerFailureIsEcho(int peer) const override;
  void refreshFailures() override;
  std::vector<SilentPeer> probePeers(const std::vector<int>& peers, double seconds) override;
  void stopThreads() override;
  void drain(uint32_t from, const Status& reason) override;
  std::optional<std::pair<uint32_t, Status>> drainPoint() const override { return contextDrain(0); }
  void failDrained(const Status& reason) override { failContext(0, {}, reason); }
  void drainContext(ContextId context, const std::vector<int>& peers, uint32_t from, const Status& reason) override;
  std::optional<std::pair<uint32_t, Status>> contextDrain(ContextId context) const override;
  uint32_t failureEpoch() const override { return failure_epoch_.load(std::memory_order_acquire); }
  Status close(const Deadline& deadline) override;

 private:
  enum class State { kCreating, kCreated, kConnected, kClosed };

  // How a peer's failure became known.
  enum class Cause { kExited, kTransport, kNotice };

  // Everything psdp knows about one peer. The error callback may run on UCX's async thread, so what it
  // writes is atomic; the rest is guarded by the worker lock.
  struct Peer {
    UcxTransport* owner = nullptr;
    UcxEndpoint ep;
    PendingList pending;
    std::atomic<bool> failed{false};
    std::atomic<int> failure{UCS_OK};  // the ucs_status_t UCX reported
    bool failure_handled = false;
    // Set by psdp's own detection (the peer's process exited) or by fail(), under the worker lock: UCX does
    // not know, so its sends are failed by force-closing the endpoint, and completions carry this status.
    Status status;
    bool close_endpoint = false;
    // This rank's receive for the peer's notice, and the sends of ours (a list: their completions must not
    // move; the ones done are dropped at the next send).
    Completion notice_in;
    std::array<char, kNoticeBytes> notice_text{};
    size_t notice_length = 0;
    struct OutgoingNotice {
      Completion done;
      std::string text;
    };
    std::list<OutgoingNotice> notices_out;
    // GUARDED_BY(the worker lock): the peer closed normally; then it exited with nothing left to do here.
    bool said_bye = false;
    bool departed = false;
    uint64_t heard = 0;  // notices read from it (probePeers)
    // It did not answer the last liveness probe (hung, or unreachable): close() does not wait to flush
    // what is queued for it.
    bool silent = false;
    bool announce = true;  // log its failure when handled
    Cause cause = Cause::kTransport;
    // Its process exited, or its connection reset, after its exit note said it had learned of a failure
    // or was closing (exit_notes.h): an echo of an earlier failure, not a cause.
    bool echo = false;
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
  Status checkPeerUsable(int peer) const;
  Status checkContextUsable(Tag tag) const;

  static void onSendDone(void* request, ucs_status_t status, void* user_data);
  static void onRecvDone(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info, void* user_data);
  static void onPeerError(void* arg, ucp_ep_h ep, ucs_status_t status);

  void afterProgress();
  void checkLiveness();
  // `announce`: log the peer's failure (fail() logs its reason once instead, not once per peer).
  void markFailed(Peer& peer, const Status& status, Cause cause, bool announce = true);
  void handleFailures();
  void handlePeerFailure(int peer);
  void recordFailure(const Status& status);
  // Keeps the first reason of a context; true if it is the first.
  bool recordContextFailure(ContextId context, const Status& status);
  void recordContextDrain(ContextId context, uint32_t from, const Status& reason);
  void bumpFailureEpoch();
  void cancelRecvs(Peer& peer);
  bool leftAfterFailure(int peer) const;
  std::vector<int> otherRanks() const;

  Status exchangeWireup(const Deadline& deadline);
  PendingOp* acquireNoticeOp(int peer, size_t bytes, bool is_recv, Completion* completion);
  Status postNoticeRecvs();
  Status postNoticeRecv(int peer);
  void cancelNoticeRecvs();
  void sendNotices(std::string_view text);
  void sendNotice(int peer, std::string_view text);
  void readNotices();
  void flushNotices(const Deadline& deadline);
  void drainBeforeJudging();
  void logLanes();
  Status shutdown(bool force, const Deadline& deadline);
  void detachLeftovers();
  void discardUnexpected(const Deadline& deadline);
  void detach(PendingOp* op, const Status& status);

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
  // Bumped after every completion: waiters compare it with what they saw before checking (waitEvents).
  std::atomic<uint32_t> events_{0};
  std::unique_ptr<WorkerLoop> loop_;
  std::unique_ptr<Peer[]> peers_;
  std::atomic<bool> failure_pending_{false};
  PeerLiveness liveness_;                  // GUARDED_BY(the worker lock)
  std::unique_ptr<ExitNotes> exit_notes_;  // null where shared memory could not be made
  // Every rank's process, from connect(): where its memory is (openPeerMemory).
  std::vector<ProcessIdentity> processes_;
  mutable std::mutex failure_mutex_;
  Status failure_;                                                             // GUARDED_BY(failure_mutex_)
  std::vector<Status> peer_failures_;                                          // GUARDED_BY(failure_mutex_), per rank
  std::vector<bool> peer_echoes_;                                              // GUARDED_BY(failure_mutex_), per rank
  std::unordered_map<ContextId, Status> context_failures_;                     // GUARDED_BY(failure_mutex_)
  std::unordered_map<ContextId, std::pair<uint32_t, Status>> context_drains_;  // GUARDED_BY(failure_mutex_)
  std::atomic<uint32_t> failure_epoch_{0};
  // Contexts failed here (failContext ran): their posts are refused. GUARDED_BY(the worker lock).
  std::bitset<size_t{1} << kContextBits> failed_contexts_;
  int liveness_countdown_ = kLivenessPolls;
  // connect()'s exchange: recvs then sends, one per rank. Members, so that a wire-up abandoned at its
  // deadline still has somewhere to complete.
  std::unique_ptr<Completion[]> wireup_;
  std::unique_ptr<ProgressThread> progress_thread_;
  std::mutex stop_threads_mutex_;  // serialises stopping progress_thread_ (stopThreads, shutdown)
  // waitEvents' timeout, the usual end of a short poll: made once, so that polling allocates nothing.
  const Status no_event_ = Status::timeout("no transport event before the deadline");
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
  peer_failures_.resize(static_cast<size_t>(nranks_));
  peer_echoes_.resize(static_cast<size_t>(nranks_));
  Result<std::unique_ptr<ExitNotes>> notes = ExitNotes::create(nranks_);
  if (notes.isOk()) {
    exit_notes_ = std::move(notes).value();
  } else {
    log_->debug("no exit note: {}", notes.status().toString());
  }
  state_ = State::kCreated;
  log_->debug("ucx transport created, {} ranks, progress {}, address {} bytes", nranks_, progressModeName(mode_),
              address_.size());
  return Status::ok();
}

// The process identity and the exit note's page go in front of the worker address, so that peers on this
// host can watch this process (peer_liveness.h) and read its note once it exits (exit_notes.h).
Result<std::vector<std::byte>> UcxTransport::localAddress() {
  if (state_ == State::kClosed) return Status::invalidUsage("ucx transport is closed");
  std::vector<std::byte> address;
  address.reserve(kAddressPrefixBytes + address_.size());
  ProcessIdentity::self().encode(address);
  if (exit_notes_) {
    exit_notes_->encodeRef(address);
  } else {
    address.resize(address.size() + ExitNotes::kEncodedRefBytes);  // a reference to nothing: no note
  }
  address.insert(address.end(), address_.begin(), address_.end());
  return address;
}

// ---- connect --------------------------------------------------------------------------------------------

Status UcxTransport::connect(const std::vector<std::vector<std::byte>>& addresses, const Deadline& deadline) {
  if (state_ != State::kCreated) return Status::invalidUsage("ucx transport: connect called twice or after close");
  if (addresses.size() != static_cast<size_t>(nranks_)) {
    return Status::invalidArgument("ucx transport: {} addresses for {} ranks", addresses.size(), nranks_);
  }
  // Started here rather than at creation: nothing needs progress before the peers are known, and the thread
  // inherits the CPU binding the communicator chose for this rank from every rank's placement.
  if (mode_ == PSDP_PROGRESS_THREAD) progress_thread_ = std::make_unique<ProgressThread>(*loop_);
  {
    auto lock = loop_->lockForPost();
    for (int r = 0; r < nranks_; ++r) {
      std::span<const std::byte> address(addresses[r]);
      Result<ProcessIdentity> identity = ProcessIdentity::decode(address);
      if (!identity.isOk() || address.size() <= kAddressPrefixBytes) {
        return Status::invalidArgument("ucx transport: the address of rank {} ({} bytes) is not a psdp ucx address", r,
                                       address.size());
      }
      // Watched before the wire-up below, which proves that the watched process is the one that answers; its
      // note is mapped while it surely lives.
      PSDP_RETURN_IF_ERROR(liveness_.watch(r, identity.value()));
      if (exit_notes_ && r != rank_) {
        PSDP_ASSIGN_OR_RETURN(SegmentRef note, ExitNotes::decodeRef(address.subspan(ProcessIdentity::kEncodedBytes)));
        exit_notes_->attach(r, identity.value(), note);
      }
      processes_.push_back(identity.value());
      PSDP_ASSIGN_OR_RETURN(peers_[r].ep, UcxEndpoint::create(worker_.get(), address.subspan(kAddressPrefixBytes), r,
                                                              &onPeerError, &peers_[r], log_));
    }
    loop_->setWatchedFdsLocked(liveness_.activeFds());
  }
  state_ = State::kConnected;
  PSDP_RETURN_IF_ERROR(exchangeWireup(deadline));
  PSDP_RETURN_IF_ERROR(postNoticeRecvs());
  logLanes();
  return Status::ok();
}

// Peers are placed by the identities that came with their addresses: the wire-up proved each one answers.
std::unique_ptr<PeerMemory> UcxTransport::openPeerMemory() const {
  if (processes_.size() != static_cast<size_t>(nranks_)) return PeerMemory::isolated(nranks_, rank_);
  return std::make_unique<PeerMemory>(processes_, rank_);
}

// Like beginOp, but not counted as outstanding work.
PendingOp* UcxTransport::acquireNoticeOp(int peer, size_t bytes, bool is_recv, Completion* completion) {
  PendingOp* op = ops_.acquire();
  op->owner = this;
  op->completion = completion;
  op->tag = kNoticeTag;
  op->bytes = bytes;
  op->peer = peer;
  op->is_recv = is_recv;
  op->is_notice = true;
  peers_[peer].pending.pushBack(op);
  return op;
}

Status UcxTransport::postNoticeRecvs() {
  auto lock = loop_->lockForPost();
  for (int r = 0; r < nranks_; ++r) {
    if (r != rank_) PSDP_RETURN_IF_ERROR(postNoticeRecv(r));
  }
  return Status::ok();
}

// Under the worker lock.
Status UcxTransport::postNoticeRecv(int r) {
  Peer& peer = peers_[r];
  peer.notice_in.reset();
  PendingOp* op = acquireNoticeOp(r, peer.notice_text.size(), /*is_recv=*/true, &peer.notice_in);
  ucp_request_param_t param = opParam(op);
  param.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  param.cb.recv = &onRecvDone;
  return endPost(op, ucp_tag_recv_nbx(worker_.get(), peer.notice_text.data(), peer.notice_text.size(),
                                      wireTag(r, kNoticeTag), kFullTagMask, &param));
}

// Best effort, under the worker lock: a notice that cannot be posted (the peer already failed) is skipped.
void UcxTransport::sendNotices(std::string_view text) {
  for (int r = 0; r < nranks_; ++r) sendNotice(r, text);
}

void UcxTransport::sendNotice(int r, std::string_view text) {
  Peer& peer = peers_[r];
  if (r == rank_ || peer.failed.load(std::memory_order_acquire) || !peer.ep.isOpen()) return;
  peer.notices_out.remove_if([](const Peer::OutgoingNotice& notice) { return notice.done.isDone(); });
  Peer::OutgoingNotice& notice = peer.notices_out.emplace_back();
  notice.text.assign(text.substr(0, kNoticeBytes));
  PendingOp* op = acquireNoticeOp(r, notice.text.size(), /*is_recv=*/false, &notice.done);
  ucp_request_param_t param = opParam(op);
  param.cb.send = &onSendDone;
  Status posted = endPost(
      op, ucp_tag_send_nbx(peer.ep.get(), notice.text.data(), notice.text.size(), wireTag(rank_, kNoticeTag), &param));
  if (!posted.isOk()) {
    peer.notices_out.pop_back();
    log_->debug("notice to peer {} not sent: {}", r, posted.toString());
  }
}

// Under the worker lock: progresses until every notice sent has left, or the deadline.
void UcxTransport::flushNotices(const Deadline& deadline) {
  auto sent = [&] {
    for (int r = 0; r < nranks_; ++r) {
      for (const Peer::OutgoingNotice& notice : peers_[r].notices_out) {
        if (!notice.done.isDone()) return false;
      }
    }
    return true;
  };
  while (!sent() && !deadline.expired()) ucp_worker_progress(worker_.get());
}

// Under the worker lock. A notice is read once; the receive is posted again for the next one, unless the
// notice was the peer's last (bye, fail).
void UcxTransport::readNotices() {
  // Every pass that reads notices is a sign of life for the peers' liveness probes: a rank probing, itself
  // spinning here, counts too.
  if (exit_notes_) exit_notes_->beat();
  for (int r = 0; r < nranks_; ++r) {
    Peer& peer = peers_[r];
    if (r == rank_ || !peer.notice_in.isDone() || !peer.notice_in.status.isOk()) continue;
    std::string_view text(peer.notice_text.data(), std::min(peer.notice_length, peer.notice_text.size()));
    peer.notice_in.status = Status::aborted("notice read");  // consumed
    ++peer.heard;
    bool more = true;  // whether the peer may send another notice
    if (text == kByeNotice) {
      peer.said_bye = true;
      more = false;
      log_->debug("peer {} closed its transport", r);
    } else if (text == kProbeNotice) {
      sendNotice(r, kProbeAnswerNotice);
    } else if (text.starts_with(kContextDrainNotice)) {
      text.remove_prefix(kContextDrainNotice.size());
      auto parsed = splitContextNotice(text);
      uint32_t from = 0;
      auto [end, error] =
          parsed ? std::from_chars(parsed->second.data(), parsed->second.data() + parsed->second.size(), from)
                 : std::from_chars_result{nullptr, std::errc::invalid_argument};
      if (parsed && error == std::errc() && end < parsed->second.data() + parsed->second.size() && *end == ':') {
        std::string_view rest = parsed->second.substr(static_cast<size_t>(end - parsed->second.data()) + 1);
        recordContextDrain(parsed->first, from, failNoticeStatus(r, rest));
      } else {
        log_->warn("peer {} sent a malformed drain notice", r);
      }
    } else if (text.starts_with(kContextFailNotice)) {
      text.remove_prefix(kContextFailNotice.size());
      if (auto parsed = splitContextNotice(text)) {
        Status status = failNoticeStatus(r, parsed->second);
        if (recordContextFailure(parsed->first, status)) {
          log_->debug("context {:#x}: told by peer {}: {}", parsed->first, r, status.toString());
        }
      } else {
        log_->warn("peer {} sent a malformed context notice", r);
      }
    } else if (text.starts_with(kFailNotice)) {
      text.remove_prefix(kFailNotice.size());
      markFailed(peer, failNoticeStatus(r, text), Cause::kNotice);
      more = false;
    }
    if (more && !peer.failed.load(std::memory_order_acquire)) {
      Status reposted = postNoticeRecv(r);
      if (!reposted.isOk()) log_->debug("notice receive from peer {} not posted again: {}", r, reposted.toString());
    }
  }
}

std::vector<int> UcxTransport::otherRanks() const {
  std::vector<int> others;
  for (int r = 0; r < nranks_; ++r) {
    if (r != rank_) others.push_back(r);
  }
  return others;
}

std::vector<SilentPeer> UcxTransport::probePeers(const std::vector<int>& peers, double seconds) {
  std::vector<int> asked;
  for (int r : peers.empty() ? otherRanks() : peers) {
    if (r >= 0 && r < nranks_ && r != rank_) asked.push_back(r);
  }
  std::vector<SilentPeer> silent;
  auto lock = loop_->lockForPost();
  if (state_ != State::kConnected) return silent;
  std::vector<uint64_t> heard_before, beats_before;
  for (int r : asked) {
    heard_before.push_back(peers_[r].heard);
    beats_before.push_back(exit_notes_ ? exit_notes_->heartbeatOf(r) : 0);
    sendNotice(r, kProbeNotice);
  }
  // A peer known failed, or gone after saying goodbye, is not asked: its state is known. One of this host
  // whose heartbeat moved is progressing, though its answer may be held up (exit_notes.h).
  auto unanswered = [&](size_t i) {
    const Peer& peer = peers_[asked[i]];
    const bool beating = exit_notes_ && exit_notes_->heartbeatOf(asked[i]) != beats_before[i];
    return peer.heard == heard_before[i] && !beating && !peer.failed.load(std::memory_order_acquire) && !peer.departed;
  };
  auto anyUnanswered = [&] {
    for (size_t i = 0; i < asked.size(); ++i) {
      if (unanswered(i)) return true;
    }
    return false;
  };
  Deadline deadline = Deadline::after(seconds);
  // Every rank that timed out probes at about the same time: pausing when nothing moved leaves the cores to
  // the peers, whose answers (or heartbeats) are what this loop waits for.
  while (anyUnanswered() && !deadline.expired()) {
    if (ucp_worker_progress(worker_.get()) == 0) std::this_thread::sleep_for(kProbePause);
    readNotices();
  }
  for (size_t i = 0; i < asked.size(); ++i) {
    peers_[asked[i]].silent = unanswered(i);
    if (!unanswered(i)) continue;
    const ProcessIdentity& process = processes_[static_cast<size_t>(asked[i])];
    const bool local = ProcessIdentity::self().isOtherLocalProcess(process);
    silent.push_back(SilentPeer{asked[i], local && processIsStopped(process.pid)});
  }
  log_->debug("liveness probe of {} peers: {} did not answer within {} s", asked.size(), silent.size(), seconds);
  return silent;
}

void UcxTransport::cancelNoticeRecvs() {
  for (int r = 0; r < nranks_; ++r) {
    peers_[r].pending.forEach([this](PendingOp* op) {
      if (op->is_notice && op->is_recv && op->request != nullptr) ucp_request_cancel(worker_.get(), op->request);
    });
  }
}

// Lets messages a dead peer sent before exiting arrive (its "bye" among them) before its exit is judged.
void UcxTransport::drainBeforeJudging() {
  for (int i = 0; i < kDrainPolls && ucp_worker_progress(worker_.get()) > 0; ++i) {
  }
  readNotices();
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

std::vector<std::string> UcxTransport::laneTransports(int peer) const {
  if (peer < 0 || peer >= nranks_ || peer == rank_) return {};
  auto lock = loop_->lockForPost();
  return peers_[peer].ep.laneTransports();
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
    PSDP_RETURN_IF_ERROR(checkPeerUsable(peer));
    PSDP_RETURN_IF_ERROR(checkContextUsable(tag));
    PendingOp* op = beginOp(peer, tag, bytes, /*is_recv=*/false, completion);
    ucp_request_param_t param = opParam(op);
    param.cb.send = &onSendDone;
    tsanMessageSent(rank_, peer);
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
    PSDP_RETURN_IF_ERROR(checkPeerUsable(peer));
    PSDP_RETURN_IF_ERROR(checkContextUsable(tag));
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
  if (op->is_notice) {
    // Any length fits a notice; the peer's failure, if any, is the transport's business, not this op's.
    if (op->is_recv) peers_[op->peer].notice_length = length;
    completion->status = status == UCS_OK ? Status::ok() : Status::aborted("notice receive canceled");
    completion->done.store(true, std::memory_order_release);
    return;
  }
  if (op->is_recv && status == UCS_OK) tsanMessageReceived(op->peer, rank_);
  completion->status = opStatus(*op, status, length);
  completion->done.store(true, std::memory_order_release);
  events_.fetch_add(1, std::memory_order_seq_cst);
}

void UcxTransport::retire(PendingOp* op) {
  PendingList::unlink(op);
  if (!op->is_notice && !op->detached) loop_->opFinished();
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
  if (status == UCS_ERR_CANCELED && failed_contexts_.test(contextOf(op.tag))) {
    Status failed = contextFailure(contextOf(op.tag));
    if (!failed.isOk()) return failed;
  }
  if (status == UCS_ERR_CANCELED)
    return Status::aborted("{} peer {} tag {:#x} canceled: transport closed", kind, op.peer, op.tag);
  log_->debug("{} peer {} tag {:#x} failed: {}", kind, op.peer, op.tag, ucs_status_string(status));
  return ucsStatus(status, fmt::format("{} peer {} tag {:#x}", kind, op.peer, op.tag));
}

// Under the worker lock.
Status UcxTransport::checkContextUsable(Tag tag) const {
  ContextId context = contextOf(tag);
  if (!failed_contexts_.test(context)) return Status::ok();
  Status failed = contextFailure(context);
  return failed.isOk() ? Status::aborted("context {:#x} failed", context) : failed;
}

// Under the worker lock.
Status UcxTransport::checkPeerUsable(int peer) const {
  if (peers_[peer].failed.load(std::memory_order_acquire)) return peerFailedStatus(peer);
  if (peers_[peer].departed) return Status::remote("peer {} has closed its transport and exited", peer);
  return Status::ok();
}

Status UcxTransport::peerFailedStatus(int peer) const {
  if (!peers_[peer].status.isOk()) return peers_[peer].status;
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
  readNotices();
  checkLiveness();
  handleFailures();
}

void UcxTransport::checkLiveness() {
  bool woken = loop_->takeWatchedReady();
  if (--liveness_countdown_ > 0 && !woken) return;
  liveness_countdown_ = kLivenessPolls;
  bool exited = false;
  liveness_.forEachExited([&](int r, uint32_t pid) {
    exited = true;
    drainBeforeJudging();
    Peer& peer = peers_[r];
    if (peer.said_bye && peer.pending.empty()) {
      peer.departed = true;
      log_->debug("peer {} (pid {}) exited after closing its transport", r, pid);
      return;
    }
    markFailed(peer,
               peer.said_bye ? Status::remote("peer {} closed its transport and exited while operations with it were "
                                              "still pending here",
                                              r)
               : leftAfterFailure(r)
                   ? Status::remote("peer {} failed: its process (pid {} on this host) exited after a failure it "
                                    "had learned of",
                                    r, pid)
                   : Status::remote("peer {} failed: its process (pid {} on this host) exited", r, pid),
               Cause::kExited);
  });
  if (exited) loop_->setWatchedFdsLocked(liveness_.activeFds());
}

// Under the worker lock. handleFailures() does the rest.
void UcxTransport::markFailed(Peer& peer, const Status& status, Cause cause, bool announce) {
  if (peer.failed.load(std::memory_order_acquire)) return;
  peer.status = status;
  peer.cause = cause;
  peer.announce = announce;
  peer.close_endpoint = true;
  peer.failure.store(UCS_ERR_CONNECTION_RESET, std::memory_order_relaxed);
  peer.failed.store(true, std::memory_order_release);
  failure_pending_.store(true, std::memory_order_release);
}

void UcxTransport::recordFailure(const Status& status) {
  {
    std::lock_guard lock(failure_mutex_);
    if (!failure_.isOk()) return;
    failure_ = status;
  }
  bumpFailureEpoch();
}

// Wakes whoever waits for events, so that it sees the failure even if none of its operations involve the
// failed peer or context.
void UcxTransport::bumpFailureEpoch() {
  if (exit_notes_) exit_notes_->noteFailed();
  failure_epoch_.fetch_add(1, std::memory_order_seq_cst);
  events_.fetch_add(1, std::memory_order_seq_cst);
}

bool UcxTransport::recordContextFailure(ContextId context, const Status& status) {
  {
    std::lock_guard lock(failure_mutex_);
    if (!context_failures_.try_emplace(context, status).second) return false;
  }
  bumpFailureEpoch();
  return true;
}

Status UcxTransport::contextFailure(ContextId context) const {
  std::lock_guard lock(failure_mutex_);
  auto it = context_failures_.find(context);
  return it == context_failures_.end() ? Status::ok() : it->second;
}

Status UcxTransport::peerFailure(int peer) const {
  if (peer < 0 || peer >= nranks_) return Status::invalidArgument("peer {} out of range [0, {})", peer, nranks_);
  std::lock_guard lock(failure_mutex_);
  return peer_failures_[static_cast<size_t>(peer)];
}

bool UcxTransport::peerFailureIsEcho(int peer) const {
  if (peer < 0 || peer >= nranks_) return false;
  std::lock_guard lock(failure_mutex_);
  return peer_echoes_[static_cast<size_t>(peer)];
}

// Under the worker lock.
bool UcxTransport::leftAfterFailure(int peer) const {
  if (!exit_notes_) return false;
  ExitNotes::Note note = exit_notes_->noteOf(peer);
  return note == ExitNotes::Note::kFailed || note == ExitNotes::Note::kClosing;
}

void UcxTransport::refreshFailures() {
  auto lock = loop_->lockForPost();
  if (state_ != State::kConnected) return;
  failure_pending_.store(true, std::memory_order_release);
  handleFailures();
}

void UcxTransport::drain(uint32_t from, const Status& reason) {
  drainContext(0, otherRanks(), from, reason);
}

void UcxTransport::drainContext(ContextId context, const std::vector<int>& peers, uint32_t from, const Status& reason) {
  recordContextDrain(context, from, reason);
  {
    auto lock = loop_->lockForPost();
    if (state_ != State::kConnected) return;
    std::string text = fmt::format("{}{}:{}:{}:{}", kContextDrainNotice, context, from, static_cast<int>(reason.code()),
                                   reason.message());
    for (int peer : peers) {
      if (peer >= 0 && peer < nranks_) sendNotice(peer, text);
    }
    flushNotices(Deadline::after(kNoticeFlushSeconds));
  }
  loop_->signal();
}

// Keeps the first point of a context; wakes waiters, whose queues start draining.
void UcxTransport::recordContextDrain(ContextId context, uint32_t from, const Status& reason) {
  {
    std::lock_guard lock(failure_mutex_);
    if (!context_drains_.try_emplace(context, from, reason).second) return;
  }
  log_->debug("context {:#x}: draining up to operation {}: {}", context, from, reason.toString());
  failure_epoch_.fetch_add(1, std::memory_order_seq_cst);
  events_.fetch_add(1, std::memory_order_seq_cst);
}

std::optional<std::pair<uint32_t, Status>> UcxTransport::contextDrain(ContextId context) const {
  std::lock_guard lock(failure_mutex_);
  auto it = context_drains_.find(context);
  if (it == context_drains_.end()) return std::nullopt;
  return it->second;
}

void UcxTransport::failContext(ContextId context, const std::vector<int>& peers, const Status& reason) {
  recordContextFailure(context, reason);
  {
    auto lock = loop_->lockForPost();
    if (state_ != State::kConnected || failed_contexts_.test(context)) return;
    failed_contexts_.set(context);
    // The root cause travels: a peer's reason when one arrived first.
    Status cause = contextFailure(context);
    log_->debug("context {:#x} failed: {}", context, cause.toString());
    std::string text =
        fmt::format("{}{}:{}:{}", kContextFailNotice, context, static_cast<int>(cause.code()), cause.message());
    for (int peer : peers) {
      if (peer >= 0 && peer < nranks_) sendNotice(peer, text);
    }
    auto ofContext = [&](const PendingOp* op) { return !op->is_notice && contextOf(op->tag) == context; };
    // Receives not yet matched complete at once; one already matched is being written by a live peer and
    // finishes within moments, so it gets the notices' flush time before it is abandoned.
    for (int r = 0; r < nranks_; ++r) {
      peers_[r].pending.forEach([&](PendingOp* op) {
        if (ofContext(op) && op->is_recv && op->request != nullptr) ucp_request_cancel(worker_.get(), op->request);
      });
    }
    // Small sends are copied out by UCX as soon as the peer's queue has room, which may be later than now
    // (a shared-memory FIFO full while the peer was busy): UCX then reads their buffers during a later
    // progress call, and those may be the team's own (agreement headers, staging), freed with the team. A
    // live peer makes room within moments; a dead one's sends failed with its endpoint.
    auto stillReading = [&] {
      bool left = false;
      for (int r = 0; r < nranks_ && !left; ++r) {
        peers_[r].pending.forEach(
            [&](PendingOp* op) { left |= ofContext(op) && (op->is_recv || op->bytes <= kCopiedSendBytes); });
      }
      return left;
    };
    Deadline flush = Deadline::after(kNoticeFlushSeconds);
    flushNotices(flush);
    while (stillReading() && !flush.expired()) ucp_worker_progress(worker_.get());
    // Larger sends cannot be canceled in UCX; their data is read only when the peer matches them, and the
    // peers, told, will not match them any more, so completing them now is safe (as fail() does).
    for (int r = 0; r < nranks_; ++r) {
      peers_[r].pending.forEach([&](PendingOp* op) {
        if (ofContext(op)) {
          detach(op, op->is_recv ? cause : cause.withContext(fmt::format("send to peer {}", r)));
        }
      });
    }
  }
  loop_->signal();
}

void UcxTransport::fail(const Status& reason) {
  recordFailure(reason);
  {
    auto lock = loop_->lockForPost();
    if (state_ != State::kConnected) return;
    // Before the endpoints close: peers then fail with this reason instead of a reset connection.
    sendNotices(fmt::format("{}{}:{}", kFailNotice, static_cast<int>(reason.code()), reason.message()));
    flushNotices(Deadline::after(kNoticeFlushSeconds));
    log_->debug("transport failed: {}", reason.toString());
    for (int r = 0; r < nranks_; ++r) markFailed(peers_[r], reason, Cause::kTransport, /*announce=*/false);
    handleFailures();
    // UCX 1.13's forced close does not complete sends still in a rendezvous handshake. They only read the
    // caller's buffer, so completing them here is safe; UCX frees its requests with the worker.
    for (int r = 0; r < nranks_; ++r) {
      peers_[r].pending.forEach([&](PendingOp* op) {
        if (!op->is_notice) detach(op, op->is_recv ? reason : reason.withContext(fmt::format("send to peer {}", r)));
      });
    }
  }
  loop_->signal();
}

Status UcxTransport::failure() const {
  std::lock_guard lock(failure_mutex_);
  return failure_;
}

void UcxTransport::handleFailures() {
  if (!failure_pending_.exchange(false, std::memory_order_acq_rel)) return;
  // A connection reset may be the peer's normal exit after its "bye", or the echo of another peer's death
  // that its own notice explains better: let what already arrived be read first.
  drainBeforeJudging();
  liveness_countdown_ = 1;
  checkLiveness();
  // The likeliest root cause first, so that failure() names it when several are known at once: a process
  // that exited explains the resets and the notices of the others, and a reset explains a notice. A peer
  // that left after learning of a failure itself (its exit note says so) explains nothing: last.
  for (int r = 0; r < nranks_; ++r) {
    if (peers_[r].failed.load(std::memory_order_acquire) && !peers_[r].failure_handled) {
      peers_[r].echo = peers_[r].cause != Cause::kNotice && leftAfterFailure(r);
    }
  }
  for (bool echo : {false, true}) {
    for (Cause cause : {Cause::kExited, Cause::kTransport, Cause::kNotice}) {
      for (int r = 0; r < nranks_; ++r) {
        if (peers_[r].cause == cause && peers_[r].echo == echo) handlePeerFailure(r);
      }
    }
  }
}

void UcxTransport::handlePeerFailure(int r) {
  Peer& peer = peers_[r];
  if (!peer.failed.load(std::memory_order_acquire) || peer.failure_handled) return;
  peer.failure_handled = true;
  if (peer.said_bye && peer.pending.empty() && peer.status.isOk()) {
    peer.departed = true;
    return;
  }
  {
    Status status = peerFailedStatus(r);
    if (peer.announce) log_->warn("{}", status.message());
    {
      std::lock_guard lock(failure_mutex_);
      peer_failures_[static_cast<size_t>(r)] = status;
      peer_echoes_[static_cast<size_t>(r)] = peer.echo;
      if (failure_.isOk()) failure_ = status;
    }
    bumpFailureEpoch();
    cancelRecvs(peer);
    if (peer.close_endpoint) {
      // UCX still believes the endpoint healthy; closing it fails the sends it holds (their completions
      // then report the peer's failure through opStatus).
      Status closed = peer.ep.close(/*force=*/true, Deadline::after(kAbortSeconds));
      if (!closed.isOk()) log_->debug("endpoint to failed peer {}: {}", r, closed.toString());
    }
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
  // With a progress thread too, the waiter drives the worker itself (the thread stands down meanwhile):
  // each completion is then seen by the thread that waits for it, without a wake-up in between, which on
  // a busy host costs tens of microseconds per message.
  std::optional<WorkerLoop::DriverScope> driver;
  if (progress_thread_) driver.emplace(*loop_);
  if (!loop_->driveUntil([&] { return eventCount() != seen; }, deadline)) {
    return no_event_;
  }
  return Status::ok();
}

// ---- shutdown -------------------------------------------------------------------------------------------

Status UcxTransport::close(const Deadline& deadline) {
  if (state_ == State::kClosed) return Status::invalidUsage("ucx transport closed twice");
  if (state_ == State::kConnected) {
    // The flush in shutdown() delivers it: peers then take this process's exit for the normal end it is.
    auto lock = loop_->lockForPost();
    sendNotices(kByeNotice);
  }
  if (exit_notes_) exit_notes_->noteClosing();
  return shutdown(/*force=*/false, deadline);
}

UcxTransport::~UcxTransport() {
  if (state_ == State::kClosed || state_ == State::kCreating) return;
  // After a failure that is the normal way out; otherwise the owner forgot close().
  if (failure().isOk()) log_->warn("ucx transport destroyed without close, aborting its operations");
  (void)shutdown(/*force=*/true, Deadline::after(kAbortSeconds));
}

void UcxTransport::stopThreads() {
  std::lock_guard lock(stop_threads_mutex_);
  if (progress_thread_) progress_thread_->stop();
}

// Stops the progress thread first, so that from here on this thread is the worker's only user and may
// progress it without the lock (UcxEndpoint::close does).
Status UcxTransport::shutdown(bool force, const Deadline& deadline) {
  {
    std::lock_guard lock(stop_threads_mutex_);
    progress_thread_.reset();
  }
  // Lets wireup messages UCX still holds go out first (under caller progress nothing may have progressed
  // the worker for a while): UCX 1.13 asserts when it purges a pending wireup reply from a TCP endpoint
  // (openucx/ucx#8175 removed the assertion).
  for (int i = 0; i < kDrainPolls && ucp_worker_progress(worker_.get()) > 0; ++i) {
  }
  cancelNoticeRecvs();
  Status result;
  if (loop_->outstanding() > 0) {
    log_->warn("closing with {} operations pending, canceling recvs", loop_->outstanding());
    for (int r = 0; r < nranks_; ++r) cancelRecvs(peers_[r]);
  }
  for (int r = 0; r < nranks_; ++r) {
    Peer& peer = peers_[r];
    bool failed = peer.failed.load(std::memory_order_acquire);
    Status status = peer.ep.close(force || failed || peer.silent, deadline);
    // A peer that closed first may reset the connection under our flush: nothing is lost that the peer
    // still wanted, since every operation has completed.
    if (status.code() == PSDP_ERR_REMOTE || failed || peer.silent) {
      log_->debug("endpoint to peer {} closed: {}", r, status.toString());
    } else if (!status.isOk()) {
      log_->warn("endpoint to peer {} closed: {}", r, status.toString());
      if (result.isOk()) result = status;
    }
  }
  discardUnexpected(deadline);
  detachLeftovers();
  state_ = State::kClosed;
  worker_.reset();
  loop_.reset();
  context_.reset();
  return result;
}

// Messages that arrived after the notice receives were canceled (the peers' "bye" among them) wait in UCX's
// unexpected queue, and UCX warns of each one left there when the worker goes. With every endpoint closed
// no more arrive: receive them into scratch space (a larger one is truncated, which discards it too).
void UcxTransport::discardUnexpected(const Deadline& deadline) {
  std::array<char, kNoticeBytes> scratch;
  ucp_tag_recv_info_t info;
  while (ucp_worker_progress(worker_.get()) > 0 && !deadline.expired()) {
  }
  while (!deadline.expired()) {
    ucp_tag_message_h message = ucp_tag_probe_nb(worker_.get(), 0, 0, /*remove=*/1, &info);
    if (message == nullptr) break;
    ucp_request_param_t param{};
    void* request = ucp_tag_msg_recv_nbx(worker_.get(), scratch.data(), scratch.size(), message, &param);
    if (!UCS_PTR_IS_PTR(request)) continue;
    while (ucp_request_check_status(request) == UCS_INPROGRESS && !deadline.expired()) {
      ucp_worker_progress(worker_.get());
    }
    if (ucp_request_check_status(request) == UCS_INPROGRESS) ucp_request_cancel(worker_.get(), request);
    ucp_request_free(request);
  }
}

// Operations UCX still holds after every endpoint is closed (a rendezvous in flight): complete them now
// so no caller waits forever, and detach them so a late callback writes nothing.
void UcxTransport::detachLeftovers() {
  for (int r = 0; r < nranks_; ++r) {
    peers_[r].pending.forEach([this](PendingOp* op) {
      if (!op->is_notice) {
        log_->warn("{} peer {} tag {:#x} still pending after close", op->is_recv ? "recv from" : "send to", op->peer,
                   op->tag);
      }
      detach(op, Status::aborted("operation abandoned by close"));
    });
  }
}

// Completes the op's caller now. The op stays allocated, since UCX may still call back with it (onDone
// then only frees it), but leaves its peer's list and the outstanding count.
void UcxTransport::detach(PendingOp* op, const Status& status) {
  if (op->completion != nullptr) {
    op->completion->status = status;
    op->completion->done.store(true, std::memory_order_release);
    events_.fetch_add(1, std::memory_order_seq_cst);
    op->completion = nullptr;
  }
  PendingList::unlink(op);
  if (!op->is_notice && !op->detached) loop_->opFinished();
  op->detached = true;
}

}  // namespace

Result<std::unique_ptr<Transport>> createUcxTransport(const TransportParams& params) {
  return UcxTransport::create(params, UcxOptions{});
}

Result<std::unique_ptr<Transport>> createUcxTransport(const TransportParams& params, const UcxOptions& options) {
  return UcxTransport::create(params, options);
}

}  // namespace psdp::transport::ucx
