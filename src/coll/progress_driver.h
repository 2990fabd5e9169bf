// The one driver of a context: it advances the started tasks of every team (TaskQueue) of the context and
// waits on the context's shared transport when none can move, so that the reduce-scatter of one team and
// the all-gather of another progress together from one thread.
//
// Progress: with a background thread (PSDP_PROGRESS=thread) one psdp thread per context drives while no
// user thread waits, and sleeps on a condition variable while every queue is empty. A thread that waits
// for a request takes the drive over: the background thread steps aside at the end of its round (the
// waiter wakes it out of the transport) and stays aside until the last waiter leaves. Every completion is
// then seen by the thread that waits for it, with no hand-over between threads (tens of microseconds each
// on a busy host, several per operation when many are in flight), while posted work still moves when
// nobody waits (backward compute overlapping communication). The transport's own progress thread stands
// aside from the first post until the queues are empty (Transport::beginDriving): the driver's drivers
// progress the transport meanwhile. Without the thread (PSDP_PROGRESS=caller), test() and wait() on any
// team drive every team of the context in the calling thread. Either way, of several threads waiting at
// once one drives and the others sleep until their request is done or the drive is handed to them
// (TaskQueue::wait).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "base/deadline.h"
#include "base/log.h"
#include "coll/task_queue.h"
#include "transport/transport.h"

namespace psdp::coll {

class ProgressDriver {
 public:
  // shared: the context's transport, which every attached queue's team posts on. background: run the
  // thread (see above).
  ProgressDriver(transport::Transport& shared, bool background, Logger log);
  // Stops the thread. REQUIRES: every queue has detached.
  ~ProgressDriver();
  // Stops the thread for good, queues attached or not (at process exit): from then on only callers that
  // wait drive. Thread-safe; later calls do nothing.
  void stopThread();

  ProgressDriver(const ProgressDriver&) = delete;
  ProgressDriver& operator=(const ProgressDriver&) = delete;

  bool background() const { return background_; }

  // Returns once every one of `requests` is done (kDone) or `until` has passed (kTimedOut), driving every
  // queue of this driver whenever its thread is not (see above) and keeping the drive from one request to
  // the next: a wait per request would hand it back to the thread at each return. The tasks' own deadlines
  // fail their queues independently of `until`. REQUIRES: each request is of a queue attached here.
  WaitResult waitAll(std::span<Request* const> requests, const Deadline& until);

 private:
  friend class TaskQueue;

  void attach(TaskQueue& queue);
  void detach(TaskQueue& queue);
  void threadMain();
  bool anyWorkLocked() const;
  // One round, under drive_mutex_: advances every queue once over, then, if nothing moved, waits on the
  // transport until an event or `until` (bounded by the started tasks' deadlines); until nullptr: polls it
  // for a few microseconds (test()).
  // yield_to_waiters (the thread's rounds): returns instead of waiting on the transport once a waiter is
  // present.
  void driveOnce(const Deadline* until, bool yield_to_waiters = false);

  // Counts a thread waiting in TaskQueue::wait: the background thread, if any, stands down while any is
  // present. A waiter leaving hands the drive to another waiter, or, the last one out, back to the thread
  // if work is left.
  class WaiterScope {
   public:
    explicit WaiterScope(ProgressDriver& driver);
    ~WaiterScope();
    WaiterScope(const WaiterScope&) = delete;
    WaiterScope& operator=(const WaiterScope&) = delete;

   private:
    ProgressDriver& driver_;
  };
  // REQUIRES: mutex_. A queue got a request / a queue lost one (see drive_held_).
  void workQueuedLocked();
  void workDoneLocked();
  void releaseDriveLocked();
  bool waitersPresent() const { return waiters_.load(std::memory_order_seq_cst) != 0; }
  // For a waiter that found the drive taken: asks the thread, if it is the one driving, to step aside, and
  // sleeps until the drive may be free, the request is done, or `until`.
  void awaitDrive(const Request& request, const Deadline& until);

  transport::Transport& shared_;
  const bool background_;
  Logger log_;

  // Guards every attached queue's queue_ and failure_, queues_ and stopping_; pairs with both condition
  // variables.
  mutable std::mutex mutex_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::vector<TaskQueue*> queues_;  // also changed under drive_mutex_, so a driving thread may read it
  bool stopping_ = false;
  uint64_t handovers_ = 0;  // bumped whenever a driver (the thread, or a waiter) lets the drive go
  std::atomic<int> waiters_{0};
  // Whether the driver holds a Transport::beginDriving: from the first post until every queue is empty
  // again (with the thread, a moment longer), so that the transport's own thread stays aside meanwhile,
  // also between one waiter and the next, rather than wake to progress what this driver's drivers
  // progress anyway.
  bool drive_held_ = false;
  // When the queues last ran out of work (the thread lets the drive go kIdleLinger after).
  std::chrono::steady_clock::time_point idle_since_;

  // Held by whoever advances tasks or waits on the transport: the tasks and the transport are not
  // thread-safe. Taken before mutex_, never while holding it.
  std::mutex drive_mutex_;
  std::thread thread_;
  std::mutex join_mutex_;  // serialises stopThread() calls
};

}  // namespace psdp::coll
