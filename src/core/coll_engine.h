// The progress engine of one communicator: a queue of posted collectives (coll::CollTask), started in posting
// order as their task slots free up (up to coll::kMaxTasksInFlight run at once) and completed in any order,
// and the driving of the transport they wait on.
//
// Progress: with a background thread (PSDP_PROGRESS=thread) one psdp thread per communicator advances the
// started tasks and waits on the transport's events (the transport runs its own progress thread), and
// sleeps on a condition variable while the queue is empty; users only wait for their request to be marked
// done. Without it (PSDP_PROGRESS=caller), test() and wait() drive the queue in the calling thread.
//
// Back-pressure: at most max_in_flight requests are queued (posted and not complete); a post beyond that
// first waits for the oldest to complete, driving progress as wait() does. Requests and the queue are
// recycled: a post allocates nothing once the engine has warmed up.
//
// Ordering: each task runs in a task slot of its Collectives and claims staging in sequence order
// (coll/collectives.h); it starts with its own deadline (PSDP_TIMEOUT from its start, not from its post, so a
// long queue does not time out work not yet begun).
//
// Failure: the first error or timeout of a task fails the engine: that request and every other one, started
// or queued, complete with the error, and post() refuses new work.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "base/deadline.h"
#include "base/log.h"
#include "base/status.h"
#include "coll/collectives.h"
#include "transport/transport.h"

namespace psdp::core {

class CollEngine;

// One posted collective, shared by the engine (until it completes) and the caller's handle.
class Request {
  // Only the engine makes requests (the constructor is public for std::allocate_shared).
  struct Key {
    explicit Key() = default;
  };

 public:
  Request(Key /*key*/, std::unique_ptr<coll::CollTask> task) : task_(std::move(task)) {}
  bool isDone() const { return done_.load(std::memory_order_acquire); }
  // REQUIRES: isDone().
  const Status& status() const { return status_; }

 private:
  friend class CollEngine;

  std::unique_ptr<coll::CollTask> task_;  // released when done: it refers to the Collectives
  bool started_ = false;
  Status status_;  // written before done_ is set
  std::atomic<bool> done_{false};
};

enum class WaitResult { kDone, kTimedOut };

class CollEngine {
 public:
  // background: run the progress thread (see above). timeout_s: each task's deadline from its start.
  // max_in_flight (>= 1): requests queued at most (see above). log: null logs to the process logger.
  CollEngine(transport::Transport& transport, bool background, double timeout_s, size_t max_in_flight, Logger log);
  // Stops the thread; requests still queued complete with invalid usage (the communicator was destroyed).
  ~CollEngine();

  CollEngine(const CollEngine&) = delete;
  CollEngine& operator=(const CollEngine&) = delete;

  // Queues `task` behind the ones posted before, once fewer than max_in_flight are queued (waiting for the
  // oldest up to the timeout). `wake_thread` false: the caller is about to wait() for it and will drive it
  // itself if the thread is idle, so the thread is not woken for it. Errors: the engine's failure, or the
  // transport's (a peer lost while nothing was running), and timeout when the oldest stays incomplete.
  Result<std::shared_ptr<Request>> post(std::unique_ptr<coll::CollTask> task, bool wake_thread = true);

  // Never blocks (in caller mode it drives progress for a few microseconds at most). True once done.
  bool test(Request& request);

  // Returns once `request` is done (kDone) or `until` has passed (kTimedOut). The tasks' own deadlines fail
  // the engine independently of `until`. With the thread too, the caller drives the queue itself whenever
  // the thread is not driving it: a blocking collective then runs in the caller's thread from post to
  // completion, with no hand-over to the thread and back (tens of microseconds each on a busy host).
  WaitResult wait(Request& request, const Deadline& until);

  // OK, or the error that failed the engine (or its transport).
  Status failure() const;

  // Fails the transport with `status` and wakes whoever drives the queue, which then completes the queued
  // requests with it (the driver alone touches tasks, so this never races with an advance). Thread-safe.
  void abort(const Status& status);

 private:
  void threadMain();
  // One round, under drive_mutex_: advances the queue once over, then, if nothing moved, waits on the
  // transport until an event or `until` (bounded by the started tasks' deadlines); until nullptr: polls it
  // for a few microseconds (test()).
  void driveOnce(const Deadline* until);
  // What one pass over the queue did: nothing; moved some task; or left a task with local work to go on
  // with (it yielded), which calls for a short poll of the transport rather than a wait.
  enum class Pass { kIdle, kMoved, kYielded };
  // Starts and advances queued tasks once each.
  Pass advanceQueue();
  // The queued request at `index`, or nullptr past the end.
  std::shared_ptr<Request> at(size_t index);
  void complete(const std::shared_ptr<Request>& request, const Status& status);
  // A fatal error: the transport is failed first (fail-stop), so that no transfer still references a
  // caller's buffer when the requests complete, then every queued request completes: `failed` (or, for
  // nullptr, the oldest) with `status`, the others with it as the reason.
  void failEverything(const Status& status, const std::shared_ptr<Request>& failed);
  void failAll(const Status& status, const std::shared_ptr<Request>& failed);
  spdlog::logger& log() const { return log_ ? *log_ : processLog(); }

  transport::Transport& transport_;
  const bool background_;
  const double timeout_s_;
  const size_t max_in_flight_;
  Logger log_;

  mutable std::mutex mutex_;  // guards queue_, failure_, stopping_; pairs with both condition variables
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::vector<std::shared_ptr<Request>> queue_;  // in posting order; capacity max_in_flight_
  Status failure_;
  bool stopping_ = false;

  // Held by whoever advances tasks or waits on the transport: the tasks and the transport are not
  // thread-safe. Taken before mutex_, never while holding it.
  std::mutex drive_mutex_;
  std::thread thread_;
};

}  // namespace psdp::core
