// The one driver of a context: it advances the started tasks of every team (TaskQueue) of the context and
// waits on the context's shared transport when none can move, so that the reduce-scatter of one team and
// the all-gather of another progress together from one thread.
//
// Progress: with a background thread (PSDP_PROGRESS=thread) one psdp thread per context drives, and sleeps
// on a condition variable while every queue is empty (the transport runs its own progress thread); users
// only wait for their request to be marked done. Whoever waits drives itself when the thread is not
// driving: a blocking collective then runs in the caller's thread from post to completion, with no
// hand-over to the thread and back (tens of microseconds each on a busy host). Without the thread
// (PSDP_PROGRESS=caller), test() and wait() on any team drive every team of the context in the calling
// thread.
#pragma once

#include <condition_variable>
#include <mutex>
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

  ProgressDriver(const ProgressDriver&) = delete;
  ProgressDriver& operator=(const ProgressDriver&) = delete;

  bool background() const { return background_; }

 private:
  friend class TaskQueue;

  void attach(TaskQueue& queue);
  void detach(TaskQueue& queue);
  void threadMain();
  bool anyWorkLocked() const;
  // One round, under drive_mutex_: advances every queue once over, then, if nothing moved, waits on the
  // transport until an event or `until` (bounded by the started tasks' deadlines); until nullptr: polls it
  // for a few microseconds (test()).
  void driveOnce(const Deadline* until);

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

  // Held by whoever advances tasks or waits on the transport: the tasks and the transport are not
  // thread-safe. Taken before mutex_, never while holding it.
  std::mutex drive_mutex_;
  std::thread thread_;
};

}  // namespace psdp::coll
