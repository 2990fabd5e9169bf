// The collectives of one team (communicator) in posting order: a queue of posted tasks (CollTask), started
// in order as their task slots free up (up to kMaxTasksInFlight run at once) and completed in any order. The
// context's ProgressDriver (coll/progress_driver.h) advances the queues of every team of its context.
//
// Back-pressure: at most max_in_flight requests are queued (posted and not complete); a post beyond that
// first waits for the oldest to complete, driving progress as wait() does. Requests and the queue are
// recycled: a post allocates nothing once the queue has warmed up.
//
// Ordering: each task runs in a task slot of its Collectives and claims staging in sequence order
// (coll/collectives.h); it starts with its own deadline (PSDP_TIMEOUT from its start, not from its post, so a
// long queue does not time out work not yet begun).
//
// Failure: the first error or timeout of a task, or the failure of the team's transport (a member lost, or
// a member that reported the team failed), fails the queue: the team's transport is failed first
// (Transport::fail, which leaves the other teams of the context alone), then that request and every other
// one, started or queued, complete with the error, and post() refuses new work. A mismatch in operation k is
// drained first: the operations before k matched on every rank and finish (the members are told, and do the
// same) before the team fails with it (docs/execution-model.md, "Failure").
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "base/log.h"
#include "base/status.h"
#include "coll/collectives.h"
#include "transport/transport.h"

namespace psdp::coll {

class ProgressDriver;
class TaskQueue;

// One posted collective, shared by the queue (until it completes) and the caller's handle.
class Request {
  // Only the queue makes requests (the constructor is public for std::allocate_shared).
  struct Key {
    explicit Key() = default;
  };

 public:
  Request(Key /*key*/, std::unique_ptr<CollTask> task) : task_(std::move(task)) {}
  // A gate: holds back the requests queued behind it until `awaited` completes (TaskQueue::postAfter).
  Request(Key /*key*/, std::shared_ptr<Request> awaited) : awaited_(std::move(awaited)) {}
  // A hook: runs fn(arg) in the driving thread when its turn comes (TaskQueue::postHook).
  Request(Key /*key*/, void (*fn)(void*), void* arg) : hook_(fn), hook_arg_(arg) {}
  bool isDone() const { return done_.load(std::memory_order_acquire); }
  // REQUIRES: isDone().
  const Status& status() const { return status_; }
  // When a collective started (its first message could go) and completed, in nanoseconds on the steady clock
  // (base/trace.h); 0 for one that never started. REQUIRES: isDone().
  uint64_t startedNs() const { return begin_ns_; }
  uint64_t completedNs() const { return end_ns_; }

 private:
  friend class TaskQueue;

  std::unique_ptr<CollTask> task_;              // released when done: it refers to the Collectives
  std::shared_ptr<Request> awaited_;            // a gate's; released when done
  Deadline gate_deadline_ = Deadline::never();  // a gate's, from when it reached its turn
  void (*hook_)(void*) = nullptr;
  void* hook_arg_ = nullptr;
  bool started_ = false;
  uint64_t begin_ns_ = 0;  // when it started
  uint64_t end_ns_ = 0;    // when it completed; written before done_ is set
  Status status_;          // written before done_ is set
  std::atomic<bool> done_{false};
};

enum class WaitResult { kDone, kTimedOut };

class TaskQueue {
 public:
  // team: the transport the team's tasks post on (failed with the queue). timeout_s: each task's deadline
  // from its start. max_in_flight (>= 1): requests queued at most (see above). log: null logs to the process
  // logger. track: the team's track in the trace (base/trace.h). Attaches to `driver`. REQUIRES: driver and
  // team outlive the queue.
  TaskQueue(ProgressDriver& driver, transport::Transport& team, double timeout_s, size_t max_in_flight, Logger log,
            uint32_t track = 0);
  // Detaches from the driver; requests still queued complete with invalid usage (the communicator was
  // destroyed).
  ~TaskQueue();

  TaskQueue(const TaskQueue&) = delete;
  TaskQueue& operator=(const TaskQueue&) = delete;

  // Queues `task` behind the ones posted before, once fewer than max_in_flight are queued (waiting for the
  // oldest up to the timeout). `wake_thread` false: the caller is about to wait() for it and will drive it
  // itself if the driver's thread is idle, so the thread is not woken for it. Errors: the queue's failure,
  // or the team's (a member lost while nothing was running), and timeout when the oldest stays incomplete.
  Result<std::shared_ptr<Request>> post(std::unique_ptr<CollTask> task, bool wake_thread = true);

  // Queues a gate: the requests posted after it start once `awaited` (a request of any queue of the same
  // driver, or one already complete) has completed. If it fails, this queue fails with its error (the team
  // is failed, so its members learn it). Counts toward max_in_flight until then; back-pressure as post().
  Status postAfter(std::shared_ptr<Request> awaited);

  // Queues a hook: fn(arg) runs once, in the thread that drives, when its turn comes: after every gate before
  // it has passed and every task before it has started (put a gate right before it to run it after a
  // request has completed: a reduce-scatter, then an all-reduce of its output on another team, then the
  // chunk engine's update). It must be short and must not call into this queue. It is not run if the queue
  // fails first; its request then completes with the failure.
  Result<std::shared_ptr<Request>> postHook(void (*fn)(void*), void* arg);

  // Never blocks (in caller mode it drives progress for a few microseconds at most). True once done.
  bool test(Request& request);

  // Returns once `request` is done (kDone) or `until` has passed (kTimedOut). The tasks' own deadlines fail
  // the queue independently of `until`. The caller drives every team of the context whenever the driver's
  // thread is not driving (see ProgressDriver).
  WaitResult wait(Request& request, const Deadline& until);

  // OK, or the error that failed the queue (or its team).
  Status failure() const;

  // Whether nothing is queued: every request posted has completed. Thread-safe.
  bool idle() const;

  // Fails the team's transport with `status` (peers in the team are told, its operations complete) and
  // wakes whoever drives, which then completes the queued requests with it. Thread-safe.
  void abort(const Status& status);

 private:
  friend class ProgressDriver;

  // What one pass over the queue did: nothing; moved some task; or left a task with local work to go on
  // with (it yielded), which calls for a short poll of the transport rather than a wait.
  enum class Pass { kIdle, kMoved, kYielded };
  struct PassResult {
    Pass pass = Pass::kIdle;
    size_t started = 0;  // tasks started and not complete after the pass
  };
  // The driver's calls, under its drive lock. advance: starts and advances queued tasks once each.
  PassResult advance();
  // Fails the queue if its oldest started task's deadline passed or the team failed; true if it did (then
  // *earliest may point into a freed request: the caller stops there). Else lowers *earliest to the started
  // tasks' earliest deadline (left as is when none started).
  bool failIfExpiredOrLost(const Deadline** earliest);
  // Fails the queue if the team failed (or `fatal` is an error); true if it did. Also starts draining when a
  // member reported a drain point, and fails the queue once the drain is over.
  bool failIfLost(const Status& fatal);
  // A mismatch in operation `from` (found here or by a member): the operations before it matched on every
  // rank and are let finish; `from` and everything posted after it are held (not advanced) until then.
  void startDrain(uint32_t from, const Status& reason);
  // Whether `request` is held by the drain: a collective at or after the drain point, or anything queued
  // behind one. Walking in order, the first held request ends the pass.
  bool heldByDrain(const Request& request) const;
  // Fails the queue with the drain's reason once nothing before the drain point is left to run, here or to
  // be posted; true if it did.
  bool failIfDrained();
  // For a timeout's message: which other ranks do not answer a liveness probe.
  std::string probeOtherRanks();
  // Whether anything is queued. REQUIRES: the driver's mutex.
  bool hasWorkLocked() const { return !queue_.empty(); }

  // Queues `request` behind the ones posted before (see post).
  Status enqueue(const std::shared_ptr<Request>& request, bool wake_thread);
  // The queued request at `index`, or nullptr past the end.
  std::shared_ptr<Request> at(size_t index);
  void complete(const std::shared_ptr<Request>& request, const Status& status);
  // A fatal error: the team's transport is failed first, so that no transfer still references a caller's
  // buffer when the requests complete, then every queued request completes: `failed` (or, for nullptr, the
  // oldest) with `status`, the others with it as the reason.
  void failEverything(const Status& status, const std::shared_ptr<Request>& failed);
  void failAll(const Status& status, const std::shared_ptr<Request>& failed);
  spdlog::logger& log() const { return log_ ? *log_ : processLog(); }

  ProgressDriver& driver_;
  transport::Transport& team_;
  const double timeout_s_;
  const size_t max_in_flight_;
  Logger log_;
  const uint32_t track_;

  // GUARDED_BY(the driver's mutex)
  std::vector<std::shared_ptr<Request>> queue_;  // in posting order; capacity max_in_flight_
  Status failure_;
  std::optional<uint32_t> last_posted_seq_;  // the last collective's sequence number posted

  // The driving thread's (under the drive lock).
  bool draining_ = false;
  uint32_t drain_from_ = 0;
  Status drain_reason_;
  uint32_t drain_checked_epoch_ = 0;  // the team's failure epoch when drainPoint() was last looked at
};

}  // namespace psdp::coll
