// The bootstrap root: one thread, one poll loop, non-blocking sockets. Every connection is bounded in time
// (the hello deadline, then the client's own wait) and in memory (the hello size limit, the cap on
// connections that have not said hello), so a stray or hostile client costs a slot for a few seconds at
// most and never delays the real ranks.
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include "base/trace.h"
#include "base/warning_limiter.h"
#include "core/bootstrap.h"
#include "core/bootstrap_protocol.h"
#include "core/root_connection.h"
#include "core/socket.h"

namespace psdp::core {
namespace {

using bootstrap::Frame;
using bootstrap::FrameType;
using State = RootConnection::State;

// A client has this long (or PSDP_TIMEOUT, if shorter) from connect to a complete hello: real ranks send
// it at once, so only stalled or hostile peers ever hit it.
constexpr double kHelloTimeoutCapS = 5.0;
// Connections that have not said hello yet; beyond this the oldest is dropped, so a flood of idle
// connections cannot exhaust the root's fds and every new connection still gets a chance.
constexpr size_t kMaxPendingConnections = 256;
constexpr int kAcceptBatch = 64;
constexpr double kAcceptPauseS = 0.05;
// After the rendezvous is decided (or the deadline passed), how long the last frames may take to flush;
// also how long the destructor waits for them when the owner lets go right after its own rank got the table.
constexpr double kFlushGraceS = 1.0;
// After a failed rendezvous, how long the root still tells ranks that come late the failure once its owner
// lets go (rank 0, whose own init just failed): a rank whose process started late learns it then, not at
// its timeout.
constexpr double kLateRankGraceS = 1.0;
// Dropped hostile peers are logged at warn up to this many times per kind (wrong secret, protocol
// violation, ...) in each window, the rest at debug and counted: a port scanner must not flood the log,
// nor a flood of one kind hide another (base/warning_limiter.h).
constexpr int kDropWarningsPerWindow = 8;
constexpr double kDropWarningWindowS = 60.0;
// The kinds of hostile drops.
constexpr const char* kWrongSecret = "wrong job secret";
constexpr const char* kProtocolViolation = "protocol violation";
constexpr const char* kEvicted = "evicted";
constexpr const char* kStalled = "no hello in time";

// What a sealed frame says after its MAC, made once and sent to many ranks: each connection gets its own
// header and MAC (bootstrap_auth.h) in front of the same bytes.
struct SharedRest {
  FrameType type = FrameType::kError;
  std::shared_ptr<const Frame> bytes;
  bootstrap::Digest digest{};
};

SharedRest shareRest(FrameType type, Frame rest) {
  SharedRest out{type, nullptr, bootstrap::digestOf(rest)};
  out.bytes = std::make_shared<const Frame>(std::move(rest));
  return out;
}

SharedRest shareError(const Status& status) {
  return shareRest(FrameType::kError, bootstrap::encodeErrorRest(status));
}

class RootServerImpl final : public RootServer {
 public:
  // timeout_s: the deadline's seconds as start() was called, what errors name (read here, after the sockets
  // are made, it would be a few ms short under a sanitizer: "within 0.999 s" for a timeout of 1).
  RootServerImpl(UniqueFd listener, UniqueFd wake, RendezvousId id, const Config& config, const Deadline& deadline,
                 double timeout_s)
      : id_(std::move(id)),
        hello_timeout_s_(std::min(kHelloTimeoutCapS, config.timeout_s > 0 ? config.timeout_s : kHelloTimeoutCapS)),
        deadline_(deadline),
        timeout_s_(timeout_s),
        listener_(std::move(listener)),
        wake_(std::move(wake)),
        root_proof_(shareRest(FrameType::kRootProof, {})),
        accepted_(shareRest(FrameType::kAccepted, {})) {}

  ~RootServerImpl() override {
    uint64_t one = 1;
    // An eventfd write only fails when the counter would overflow, which one stop request cannot cause.
    (void)::write(wake_.get(), &one, sizeof(one));
    if (thread_.joinable()) thread_.join();
  }

  void startThread() {
    thread_ = std::thread([this] { run(); });
  }
  const RendezvousId& id() const override { return id_; }
  bool finished() const override { return finished_.load(std::memory_order_acquire); }

 private:
  enum class Phase { kGathering, kComplete, kFailed };

  void run();
  bool shouldEnd() const;
  bool pollOnce();
  bool onStopRequest();
  int pollTimeoutMs() const;
  void acceptAll();
  void onEvents(RootConnection& c, short revents);
  void onChallenge(RootConnection& c, std::span<const std::byte> body);
  void onHello(RootConnection& c, std::span<const std::byte> body);
  bool sendSealed(RootConnection& c, const SharedRest& rest);
  void registerRank(RootConnection& c, bootstrap::Hello hello);
  void complete();
  void fail(const Status& status);
  void tell(RootConnection& c, const SharedRest& rest);
  void tellFailure(RootConnection& c);
  void checkTimers();
  void stopAccepting();
  // hostile_kind: for a peer that broke the protocol (or guessed the secret), one of the kinds above;
  // nullptr for one that just left.
  void drop(RootConnection& c, const std::string& why, const char* hostile_kind);
  void summariseDrops();
  void unregister(RootConnection& c);
  void evictOldestPending();
  Status missingStatus(std::string_view when) const;

  const RendezvousId id_;
  const double hello_timeout_s_;
  const Deadline deadline_;
  const double timeout_s_;
  UniqueFd listener_;
  UniqueFd wake_;
  const SharedRest root_proof_;
  const SharedRest accepted_;

  // Everything below belongs to the thread.
  std::vector<std::unique_ptr<RootConnection>> conns_;  // in accept order
  size_t pending_ = 0;                                  // conns_ still saying hello (awaitingHello)
  Phase phase_ = Phase::kGathering;
  bool accepting_ = true;
  bool stopping_ = false;  // the owner asked the thread to end
  Deadline flush_deadline_ = Deadline::never();
  Deadline late_grace_ = Deadline::never();     // kFailed, owner gone: accepting ends then
  Deadline accept_pause_ = Deadline::after(0);  // accepting resumes then, after running out of fds
  int nranks_ = 0;                              // from the first valid hello
  int first_rank_ = -1;                         // who set nranks_, for mismatch messages
  std::vector<RootConnection*> ranks_;          // registered connection of each rank
  int registered_ = 0;
  SharedRest failure_;      // kFailed: the error every rank is told
  std::vector<bool> told_;  // kFailed: ranks that have been sent failure_
  int told_count_ = 0;
  WarningLimiter drop_warnings_{kDropWarningsPerWindow, kDropWarningWindowS};

  std::atomic<bool> finished_{false};
  std::thread thread_;  // last: started once every member above exists
};

void RootServerImpl::run() {
  processLog().debug("bootstrap root listening on {}", id_.address());
  while (!shouldEnd() && pollOnce()) {
    checkTimers();
    std::erase_if(conns_, [](const auto& c) { return c->state == State::kDead; });
  }
  conns_.clear();
  listener_.reset();
  summariseDrops();
  finished_.store(true, std::memory_order_release);
}

bool RootServerImpl::shouldEnd() const {
  if (accepting_) return false;
  if (flush_deadline_.expired()) return true;
  return std::none_of(conns_.begin(), conns_.end(), [](const auto& c) { return c->state == State::kClosing; });
}

// One poll and its dispatch. Returns false when the owner asked the thread to stop.
bool RootServerImpl::pollOnce() {
  std::vector<pollfd> fds;
  std::vector<RootConnection*> polled;
  fds.reserve(conns_.size() + 2);
  // The eventfd stays readable once written: after the first notice it is no longer polled.
  fds.push_back({wake_.get(), static_cast<short>(stopping_ ? 0 : POLLIN), 0});
  bool accept_now = accepting_ && accept_pause_.expired();
  fds.push_back({listener_.get(), static_cast<short>(accept_now ? POLLIN : 0), 0});
  for (const auto& c : conns_) {
    if (c->state == State::kDead) continue;
    fds.push_back({c->fd(), c->pollEvents(), 0});
    polled.push_back(c.get());
  }
  int n = ::poll(fds.data(), fds.size(), pollTimeoutMs());
  if (n < 0 && errno != EINTR) {
    processLog().error("bootstrap root {}: poll failed: {}", id_.address(), std::strerror(errno));
    return false;
  }
  if (n <= 0) return true;
  if (fds[0].revents != 0 && !onStopRequest()) return false;
  if (fds[1].revents != 0 && accept_now) acceptAll();
  for (size_t i = 0; i < polled.size(); ++i) {
    if (fds[i + 2].revents != 0 && polled[i]->state != State::kDead) onEvents(*polled[i], fds[i + 2].revents);
  }
  return true;
}

// The owner is letting go. Once the rendezvous is decided the table (or error) is already queued, and the
// owner is typically rank 0 whose own table just arrived: the other ranks still get theirs, within
// kFlushGraceS. Before that, every waiting rank is told the root is gone. Returns false to end now.
bool RootServerImpl::onStopRequest() {
  stopping_ = true;
  if (phase_ == Phase::kGathering) {
    SharedRest aborted =
        shareError(Status::aborted("the bootstrap root {} was shut down before every rank arrived", id_.address()));
    for (RootConnection* c : ranks_) {
      if (c != nullptr) tell(*c, aborted);  // one non-blocking write: the small frame fits
    }
    return false;
  }
  if (phase_ == Phase::kFailed && accepting_) {
    late_grace_ = Deadline::after(kLateRankGraceS);
    return true;
  }
  if (accepting_) stopAccepting();
  flush_deadline_ = flush_deadline_.min(Deadline::after(kFlushGraceS));
  return true;
}

// Until the earliest timer: a connection's hello deadline or give-up time, the root deadline, the flush.
int RootServerImpl::pollTimeoutMs() const {
  Deadline next = accepting_ ? deadline_.min(late_grace_) : flush_deadline_;
  if (accepting_ && !accept_pause_.expired()) next = next.min(accept_pause_);
  for (const auto& c : conns_) {
    if (c->awaitingHello()) next = next.min(c->hello_deadline);
    if (c->state == State::kRegistered) next = next.min(c->give_up);
  }
  return next.remainingMs(1000);
}

void RootServerImpl::acceptAll() {
  for (int i = 0; i < kAcceptBatch; ++i) {
    UniqueFd fd(::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd.valid()) {
      if (errno == EMFILE || errno == ENFILE) {
        // Out of fds: free the oldest idle connection, and pause accepting briefly; the listener stays
        // readable, and polling it at once would spin.
        int err = errno;
        if (pending_ > 0) evictOldestPending();
        accept_pause_ = Deadline::after(kAcceptPauseS);
        processLog().warn("bootstrap root {}: accept: {}", id_.address(), std::strerror(err));
      }
      return;  // EAGAIN, or a connection that was reset before it was accepted
    }
    if (!prepareFd(fd.get()).isOk()) continue;
    auto peer = peerAddress(fd.get());
    Result<bootstrap::Nonce> nonce = bootstrap::freshNonce();
    if (!nonce.isOk()) {
      processLog().error("bootstrap root {}: {}", id_.address(), nonce.status().message());
      continue;
    }
    if (pending_ >= kMaxPendingConnections) evictOldestPending();
    auto conn = std::make_unique<RootConnection>(std::move(fd), peer.isOk() ? peer.value().toString() : "unknown peer",
                                                 Deadline::after(hello_timeout_s_));
    conn->nonces.root = nonce.value();
    conn->queue(std::make_shared<const Frame>(bootstrap::encodeServerHello(nonce.value())));
    // A fresh socket's send buffer always takes the 32 bytes; failure means the peer already reset.
    if (conn->flush()) {
      conns_.push_back(std::move(conn));
      ++pending_;
    }
  }
}

void RootServerImpl::evictOldestPending() {
  for (const auto& c : conns_) {
    if (c->awaitingHello()) {
      drop(*c, fmt::format("evicted: more than {} connections have not sent a hello", kMaxPendingConnections),
           kEvicted);
      return;
    }
  }
}

void RootServerImpl::onEvents(RootConnection& c, short revents) {
  if ((revents & (POLLOUT | POLLERR | POLLHUP)) != 0 && c.hasOutput() && !c.flush()) {
    // The peer went away while we wrote; for a registered rank that is the same as a disconnect.
    drop(c, "connection failed while writing", nullptr);
    return;
  }
  if ((revents & (POLLIN | POLLHUP | POLLERR)) == 0 || c.state == State::kDead) return;
  if (!c.awaitingHello() && c.state != State::kRegistered) return;
  RootConnection::ReadOutcome outcome = c.read();
  if (outcome.kind == RootConnection::ReadOutcome::Kind::kDrop) {
    drop(c, outcome.why, outcome.hostile ? kProtocolViolation : nullptr);
  } else if (outcome.kind == RootConnection::ReadOutcome::Kind::kFrame) {
    if (c.state == State::kAwaitChallenge) {
      onChallenge(c, outcome.body);
    } else {
      onHello(c, outcome.body);
    }
  }
}

// Sends the header and MAC of `rest` on this connection, then the shared bytes. False when it could not be
// sealed or the peer is gone: the caller drops the connection.
bool RootServerImpl::sendSealed(RootConnection& c, const SharedRest& rest) {
  Result<Frame> head = bootstrap::encodeSealedHead(rest.type, id_.secret, c.nonces, rest.digest, rest.bytes->size());
  if (!head.isOk()) {
    processLog().error("bootstrap root {}: {}", id_.address(), head.status().message());
    return false;
  }
  c.queue(std::make_shared<const Frame>(std::move(head).value()));
  if (!rest.bytes->empty()) c.queue(rest.bytes);
  return c.flush();
}

// The client's nonce: the root proves it holds the secret, bound to both nonces, before the client says
// anything that depends on the secret.
void RootServerImpl::onChallenge(RootConnection& c, std::span<const std::byte> body) {
  Result<bootstrap::Nonce> nonce = bootstrap::decodeNonceBody(body);
  if (!nonce.isOk()) {
    drop(c, nonce.status().message(), kProtocolViolation);
    return;
  }
  c.nonces.client = nonce.value();
  c.state = State::kAwaitHello;
  if (!sendSealed(c, root_proof_)) drop(c, "connection failed while writing", nullptr);
}

void RootServerImpl::onHello(RootConnection& c, std::span<const std::byte> body) {
  Result<std::span<const std::byte>> rest = bootstrap::openSealed(FrameType::kHello, body, id_.secret, c.nonces);
  if (!rest.isOk()) {
    // A MAC that does not verify comes from a peer without the secret: it ignored our (unverifiable) proof.
    if (rest.status().code() == PSDP_ERR_MISMATCH) {
      drop(c, "wrong job secret (its hello's MAC does not verify)", kWrongSecret);
    } else {
      drop(c, rest.status().message(), kProtocolViolation);
    }
    return;
  }
  Result<bootstrap::Hello> decoded = bootstrap::decodeHelloRest(rest.value());
  if (!decoded.isOk()) {
    drop(c, decoded.status().message(), kProtocolViolation);
    return;
  }
  bootstrap::Hello hello = std::move(decoded).value();
  --pending_;
  c.state = State::kClosing;  // unless registered below
  if (hello.nranks < 1 || hello.nranks > static_cast<uint32_t>(bootstrap::kMaxRanks) || hello.rank >= hello.nranks) {
    tell(c, shareError(Status::invalidArgument("rank {} and nranks {} are not 0 <= rank < nranks <= {}", hello.rank,
                                               hello.nranks, bootstrap::kMaxRanks)));
    return;
  }
  int rank = static_cast<int>(hello.rank);
  int nranks = static_cast<int>(hello.nranks);
  c.rank = rank;
  if (phase_ == Phase::kFailed) {
    tellFailure(c);
    return;
  }
  if (nranks_ == 0) {
    nranks_ = nranks;
    first_rank_ = rank;
    ranks_.assign(static_cast<size_t>(nranks_), nullptr);
  } else if (nranks != nranks_) {
    fail(Status::mismatch("rank {} passed nranks {} but rank {} passed nranks {}", rank, nranks, first_rank_, nranks_));
    tellFailure(c);
    return;
  }
  if (RootConnection* other = ranks_[static_cast<size_t>(rank)]) {
    fail(Status::mismatch("rank {} was claimed by two processes ({} and {})", rank, other->peer(), c.peer()));
    tellFailure(c);
    return;
  }
  registerRank(c, std::move(hello));
}

void RootServerImpl::registerRank(RootConnection& c, bootstrap::Hello hello) {
  c.state = State::kRegistered;
  c.payload = std::move(hello.payload);
  if (hello.wait_ms != UINT32_MAX) {
    // Answer a little before the client gives up so it learns which ranks are missing; the margin covers
    // the network and the client's own clock.
    double wait_s = hello.wait_ms / 1000.0;
    c.give_up = Deadline::after(wait_s - std::clamp(wait_s * 0.1, 0.05, 0.5));
  }
  ranks_[static_cast<size_t>(c.rank)] = &c;
  ++registered_;
  processLog().debug("bootstrap root {}: rank {} of {} arrived from {}", id_.address(), c.rank, nranks_, c.peer());
  if (!sendSealed(c, accepted_)) {
    drop(c, "connection failed while writing", nullptr);
    return;
  }
  if (registered_ == nranks_) complete();
}

void RootServerImpl::complete() {
  bootstrap::Table table(static_cast<size_t>(nranks_));
  for (int r = 0; r < nranks_; ++r) table[static_cast<size_t>(r)] = std::move(ranks_[static_cast<size_t>(r)]->payload);
  SharedRest rest = shareRest(FrameType::kTable, bootstrap::encodeTableRest(table));
  phase_ = Phase::kComplete;
  for (RootConnection* c : ranks_) tell(*c, rest);
  ranks_.assign(ranks_.size(), nullptr);
  registered_ = 0;
  processLog().debug("bootstrap root {}: all {} ranks arrived, table sent", id_.address(), nranks_);
  stopAccepting();
}

// Every rank that is or will be connected gets `status`: the rendezvous cannot succeed any more.
void RootServerImpl::fail(const Status& status) {
  processLog().warn("bootstrap root {}: rendezvous failed: {}", id_.address(), status.message());
  phase_ = Phase::kFailed;
  failure_ = shareError(status);
  told_.assign(static_cast<size_t>(nranks_), false);
  for (RootConnection*& c : ranks_) {
    if (c != nullptr) tellFailure(*std::exchange(c, nullptr));
  }
  registered_ = 0;
}

void RootServerImpl::tell(RootConnection& c, const SharedRest& rest) {
  c.state = State::kClosing;
  // A rank that is gone cannot be told anything; there is nobody else to report it to.
  if (!sendSealed(c, rest)) c.kill();
}

// Sends the failure; once every rank of [0, nranks) has it, late ranks are the only thing left to wait
// for and there are none, so the root stops.
void RootServerImpl::tellFailure(RootConnection& c) {
  tell(c, failure_);
  if (c.rank >= 0 && c.rank < nranks_ && !told_[static_cast<size_t>(c.rank)]) {
    told_[static_cast<size_t>(c.rank)] = true;
    if (++told_count_ == nranks_ && accepting_) stopAccepting();
  }
}

void RootServerImpl::checkTimers() {
  for (const auto& c : conns_) {
    if (c->awaitingHello() && c->hello_deadline.expired()) {
      drop(*c, fmt::format("no complete hello within {:g} s", hello_timeout_s_), kStalled);
    } else if (c->state == State::kRegistered && c->give_up.expired()) {
      // This rank stops waiting, so the rendezvous cannot complete: every rank learns now which are missing.
      fail(missingStatus(fmt::format("rank {}'s own timeout", c->rank)));
    }
  }
  if (accepting_ && late_grace_.expired()) {
    stopAccepting();
    flush_deadline_ = flush_deadline_.min(Deadline::after(kFlushGraceS));
  }
  if (accepting_ && deadline_.expired()) {
    if (phase_ == Phase::kGathering) {
      fail(missingStatus(fmt::format("{:.3g} s (PSDP_TIMEOUT)", timeout_s_)));
    }
    stopAccepting();
  }
}

// Names the ranks that never arrived (a rank that arrived and left fails the rendezvous at once: drop()).
Status RootServerImpl::missingStatus(std::string_view when) const {
  if (nranks_ == 0) return Status::timeout("no rank reached the bootstrap root {} within {}", id_.address(), when);
  std::vector<int> missing;
  for (int r = 0; r < nranks_; ++r) {
    if (ranks_[static_cast<size_t>(r)] == nullptr) missing.push_back(r);
  }
  return Status::timeout("ranks {} of {} had not reached the bootstrap root {} within {}",
                         bootstrap::formatRanks(missing), nranks_, id_.address(), when);
}

// No new connections: drop the ones still saying hello, close the listener (late clients get refused
// rather than hang), and give the frames already queued a bounded time to flush.
void RootServerImpl::stopAccepting() {
  accepting_ = false;
  listener_.reset();
  for (const auto& c : conns_) {
    if (c->awaitingHello()) drop(*c, "the rendezvous is over", nullptr);
  }
  flush_deadline_ = Deadline::after(std::max(deadline_.remainingSeconds(), kFlushGraceS));
}

void RootServerImpl::unregister(RootConnection& c) {
  if (c.state != State::kRegistered) return;
  ranks_[static_cast<size_t>(c.rank)] = nullptr;
  --registered_;
}

void RootServerImpl::drop(RootConnection& c, const std::string& why, const char* hostile_kind) {
  // A rank that registered and went away has failed (its process died, or it gave up): nobody can complete
  // the rendezvous without it, so every rank learns it now, not at its timeout.
  const bool rank_left = c.state == State::kRegistered && phase_ == Phase::kGathering;
  if (c.awaitingHello()) --pending_;
  unregister(c);
  c.kill();
  // `why` and the peer address never contain the secret or any byte the peer sent: RootConnection
  // describes frames by their sizes and types only.
  const WarningLimiter::Verdict verdict =
      hostile_kind != nullptr ? drop_warnings_.offer(hostile_kind, trace::nowNs()) : WarningLimiter::Verdict{};
  if (!verdict.admit) {
    processLog().debug("bootstrap root {}: dropped connection from {}: {}", id_.address(), c.peer(), why);
  } else {
    processLog().warn("bootstrap root {}: dropped connection from {}: {}{}", id_.address(), c.peer(), why,
                      verdict.held_back == 0 ? std::string()
                                             : fmt::format(" ({} more '{}' drops since the last warning, logged at "
                                                           "debug level)",
                                                           verdict.held_back, hostile_kind));
  }
  if (rank_left) {
    fail(
        Status::remote("rank {} (from {}) left the bootstrap root {} before every rank arrived: its process died or "
                       "gave up ({})",
                       c.rank, c.peer(), id_.address(), why));
  }
}

// Drops whose warnings were held back since the last one of their kind, so that none goes unmentioned.
void RootServerImpl::summariseDrops() {
  for (const auto& [kind, count] : drop_warnings_.pending()) {
    processLog().warn("bootstrap root {}: {} more '{}' drops since the last warning (logged at debug level)",
                      id_.address(), count, kind);
  }
}

// The interface address, then the port: the inherited socket when it is bound there, else the given port,
// else the first free one of the range.
Result<UniqueFd> bindListener(const std::string& host, uint16_t port, const PortRange& range, int inherited) {
  if (inherited >= 0 && port != 0) {
    PSDP_ASSIGN_OR_RETURN(SockAddr addr, SockAddr::numeric(host, port));
    std::string why;
    UniqueFd fd = adoptInheritedListener(inherited, addr, &why);
    if (fd.valid()) return fd;
    processLog().debug("bootstrap root: not using inherited listener fd {} ({}); binding {}", inherited, why,
                       addr.toString());
  }
  if (port != 0 || range.lo == 0) {
    PSDP_ASSIGN_OR_RETURN(SockAddr addr, SockAddr::numeric(host, port));
    return listenOn(addr);
  }
  for (int p = range.lo; p <= range.hi; ++p) {
    PSDP_ASSIGN_OR_RETURN(SockAddr addr, SockAddr::numeric(host, static_cast<uint16_t>(p)));
    int err = 0;
    auto fd = listenOn(addr, &err);
    if (fd.isOk() || (err != EADDRINUSE && err != EACCES)) return fd;
  }
  return Status::system("no free port in {}-{} on {} (PSDP_PORT_RANGE)", range.lo, range.hi, host);
}

}  // namespace

Result<std::unique_ptr<RootServer>> RootServer::start(const std::string& bind_host, uint16_t port,
                                                      const JobSecret& secret, const Config& config,
                                                      const Deadline& deadline, int inherited_listener) {
  const double timeout_s = deadline.remainingSeconds();
  std::string host = bind_host;
  if (host.empty()) {
    PSDP_ASSIGN_OR_RETURN(host, interfaceAddress(config.socket_ifname));
  }
  PSDP_ASSIGN_OR_RETURN(UniqueFd listener, bindListener(host, port, config.port_range, inherited_listener));
  PSDP_ASSIGN_OR_RETURN(SockAddr local, localAddress(listener.get()));
  UniqueFd wake(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake.valid()) return Status::fromErrno(errno, "eventfd");
  RendezvousId id{local.host(), local.port(), secret};
  auto root = std::make_unique<RootServerImpl>(std::move(listener), std::move(wake), std::move(id), config, deadline,
                                               timeout_s);
  root->startThread();
  return std::unique_ptr<RootServer>(std::move(root));
}

}  // namespace psdp::core
