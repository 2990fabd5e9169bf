// The transport interface: the point-to-point operations collective algorithms (src/coll) and the engine are
// built on. A backend (UCX for host memory, NCCL for CUDA memory) implements it; nothing above this
// interface names a backend except core/ and transport/registry.cc.
//
// Threading: send/recv/eventCount/waitEvents may be called from any one user thread while the backend's
// own progress thread (PSDP_PROGRESS=thread) runs; the backend does the locking. Completions are written by
// whichever thread drives progress.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/deadline.h"
#include "base/log.h"
#include "base/status.h"

namespace psdp::transport {

class PeerMemory;

// Matching key of a message. Only the low kTagBits bits are the caller's; the backend adds the sender's
// rank, so a recv from `peer` never matches a message of another peer. Messages between one pair of ranks
// with equal tags match in the order they were posted.
using Tag = uint64_t;
inline constexpr int kTagBits = 45;
inline constexpr Tag kTagMask = (Tag{1} << kTagBits) - 1;
// The top bit of the caller's tag space is the backends': it tags their own messages (UCX: connect()'s
// wire-up exchange). send/recv reject caller tags with it set (invalid argument).
inline constexpr Tag kReservedTagBit = Tag{1} << (kTagBits - 1);

// The context field of a tag: the team (communicator) a message belongs to, when teams share one transport.
// Callers put their team's id there; failContext() acts on every operation of one id and nothing else.
inline constexpr int kContextShift = 28;
inline constexpr int kContextBits = 16;
using ContextId = uint16_t;
constexpr ContextId contextOf(Tag tag) {
  return static_cast<ContextId>((tag >> kContextShift) & ((Tag{1} << kContextBits) - 1));
}
static_assert(kContextShift + kContextBits < kTagBits, "the context field stays clear of the reserved bit");

// The completion of one send or recv. Owned by the caller; it must stay alive and unmoved until isDone().
// The backend writes `status` and then sets `done` (release), exactly once per posted operation.
struct Completion {
  std::atomic<bool> done{false};
  Status status;

  void reset() {
    status = Status::ok();
    done.store(false, std::memory_order_relaxed);
  }
  bool isDone() const { return done.load(std::memory_order_acquire); }
};

struct Capabilities {
  bool host_memory = false;
  bool cuda_memory = false;
};

// A peer that did not answer Transport::probePeers.
struct SilentPeer {
  int rank = -1;
  bool stopped = false;  // its process, on this host, is stopped (SIGSTOP, a debugger)
};

struct TransportParams {
  int rank = 0;
  int nranks = 1;
  psdp_progress_mode_t progress_mode = PSDP_PROGRESS_THREAD;
  Logger log;
};

class Transport {
 public:
  virtual ~Transport() = default;

  virtual const char* name() const = 0;
  virtual Capabilities capabilities() const = 0;

  // This rank's address, to be all-gathered through the bootstrap.
  virtual Result<std::vector<std::byte>> localAddress() = 0;

  // Creates an endpoint to every rank (addresses indexed by rank; this rank's own entry included) and
  // completes wire-up with each, so that the first collective does not pay for it. Collective: every
  // rank calls it with the same table. Errors: remote (a peer unreachable), timeout.
  virtual Status connect(const std::vector<std::vector<std::byte>>& addresses, const Deadline& deadline) = 0;

  // Direct access to the host memory of the peers of this host (peer_memory.h), as connect found each peer
  // placed: a new object per call, with its own cache of mappings; ranks are this transport's. A backend
  // that moves no host memory answers every peer elsewhere. REQUIRES: connect() succeeded.
  virtual std::unique_ptr<PeerMemory> openPeerMemory() const = 0;
  // The transports the lanes to `peer` use, by the backend's names (UCX: "sysv", "cma", "tcp", "rc_mlx5"),
  // sorted and distinct: what a tuning file's signature names (tune/interconnect_signature.h). Empty for this
  // rank itself and for a backend with no lanes of its own. REQUIRES: connect() succeeded. Thread-safe.
  virtual std::vector<std::string> laneTransports(int peer) const = 0;

  // Nonblocking. Buffers must stay valid until completion->isDone(). `bytes` may be 0. Posting to a
  // peer already known to have failed returns remote error at once; a failure discovered later
  // completes every pending operation with remote error.
  virtual Status send(int peer, Tag tag, const void* buf, size_t bytes, Completion* completion) = 0;
  virtual Status recv(int peer, Tag tag, void* buf, size_t bytes, Completion* completion) = 0;

  // A counter the backend increments after every completion it sets. Waiters read it, check their
  // completions, then call waitEvents(seen) so that no completion can slip between check and sleep.
  virtual uint32_t eventCount() const = 0;

  // Returns once eventCount() != seen, or the deadline has passed (then timeout). The caller drives the
  // backend's progress itself meanwhile (a progress thread, if any, stands aside), sleeping on the backend's
  // wake-up fd when nothing moves. It may return early (spurious wakeup): callers loop. Errors: timeout,
  // and any fatal backend error.
  virtual Status waitEvents(uint32_t seen, const Deadline& deadline) = 0;
  // Changes eventCount(), so that a waitEvents in another thread returns: work that is not a transfer
  // (a task posted to a driver that sleeps here) is waiting. Cheap while nobody sleeps. Thread-safe.
  virtual void wake() = 0;
  // Brackets a stretch in which the owner's threads will call waitEvents over and over (a driver with work
  // to do): a progress thread of the backend stands aside for the whole stretch rather than waking between
  // two waits and competing for the cores and the worker. Nests; thread-safe; calls pair up.
  virtual void beginDriving() = 0;
  virtual void endDriving() = 0;

  // Fail-stop, for users that cannot go on once any rank is lost (a communicator's collectives): peers are
  // told `reason` (best effort), every pending operation completes with it (receives are canceled, sends
  // failed by closing the endpoints) and every later post returns it. When it returns, every completion
  // is written and no receive remains posted. Thread-safe; later calls keep the first reason.
  virtual void fail(const Status& reason) = 0;
  // The first failure: a peer's (remote error naming it, as soon as it is known even if no operation
  // involves that peer) or fail()'s reason; ok while every peer is healthy. Waiters are woken
  // (eventCount() changes) when it is first set. Thread-safe.
  virtual Status failure() const = 0;

  // Failure of one context (a team sharing this transport with others), leaving the other contexts and the
  // peers' endpoints alone. Tells `peers` (context ranks, best effort) `reason`, which they report for the
  // context (contextFailure); cancels this rank's receives of the context and lets those already matched
  // finish (briefly), then completes whatever of the context is left, sends included, with `reason`; later
  // posts on the context return it. When it returns no receive of the context remains posted, and every
  // completion of the context is written. Thread-safe; later calls keep the first reason (a peer's notice
  // that arrived first included).
  virtual void failContext(ContextId context, const std::vector<int>& peers, const Status& reason) = 0;
  // The failure of a context: its own failContext's reason or the first reason a peer reported for it; ok
  // otherwise. Thread-safe.
  virtual Status contextFailure(ContextId context) const = 0;
  // The failure of one peer (remote error naming it) once known; ok while it is healthy. Thread-safe.
  virtual Status peerFailure(int peer) const = 0;
  // Whether peer's failure is an echo: its process exited (or its connection reset) after it had learned of
  // a failure itself, so an earlier failure, if one is known, explains it. Thread-safe.
  virtual bool peerFailureIsEcho(int peer) const = 0;
  // Looks now, rather than at its next periodic check, for peers whose processes have exited and for notices
  // that have arrived, and records what it finds. For a caller about to blame an error on the peer it came
  // from: that peer may only have left because of an earlier failure, which this makes known first.
  // Thread-safe.
  virtual void refreshFailures() = 0;
  // Asks `peers` (every other rank when empty) whether they are alive, for a caller whose operation timed
  // out: a ring hears only its neighbours, and the rank that hangs may be any. Sends each one not already
  // known failed a probe and progresses until each has answered (any notice counts: a peer that reports a
  // failure or closes is alive) or `seconds` have passed. Returns the ones that did not answer, in rank
  // order. Thread-safe.
  virtual std::vector<SilentPeer> probePeers(const std::vector<int>& peers, double seconds) = 0;
  // Bumped whenever a failure of any kind is recorded (a peer's, a context's, the transport's): readers of
  // the three above may cache their answers until it changes. Waiters are woken (eventCount() changes) too.
  virtual uint32_t failureEpoch() const = 0;

  // Draining: a failure that spares what came before a point of the team's order. A mismatch found in
  // operation `from` says that every earlier operation matched on every rank and may still complete, so
  // the team is not failed at once (which would cancel them on ranks still running them): the other members
  // are told (drain), each rank lets its operations before `from` finish, then fails the team itself with
  // failDrained, which tells nobody (they all know). Nothing is canceled or refused by drain().
  // Thread-safe. These act on this transport's team: a TeamTransport's, or context 0 with every rank.
  virtual void drain(uint32_t from, const Status& reason) = 0;
  // The drain point and reason first reported for the team, by a member or this rank.
  virtual std::optional<std::pair<uint32_t, Status>> drainPoint() const = 0;
  // Fails the team like fail(), without telling its members.
  virtual void failDrained(const Status& reason) = 0;
  // The context-level forms: tells `peers` (context ranks, best effort) that `from` is the drain point of
  // `context` (recorded here too); contextDrain is the first point recorded for a context.
  virtual void drainContext(ContextId context, const std::vector<int>& peers, uint32_t from, const Status& reason) = 0;
  virtual std::optional<std::pair<uint32_t, Status>> contextDrain(ContextId context) const = 0;

  // Stops the backend's own threads for good, leaving everything else as it is: at process exit, so that
  // none of them still calls into the backend's libraries while those are torn down. Operations then move
  // only while a caller waits. Thread-safe; later calls do nothing.
  virtual void stopThreads() = 0;

  // Flushes every endpoint and closes it, then stops the progress thread. Call once, after every
  // operation has completed. Blocks up to the deadline.
  virtual Status close(const Deadline& deadline) = 0;
};

// Waits until `completion` is done, then returns its status (or timeout).
Status waitFor(Transport& transport, const Completion& completion, const Deadline& deadline);

}  // namespace psdp::transport
