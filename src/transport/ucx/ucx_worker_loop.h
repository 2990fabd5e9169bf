// Access discipline for one ucp_worker shared by a user thread and a progress thread, and the protocol that
// lets the progress side sleep on the worker's event fd.
//
// Locking: the worker is created UCS_THREAD_MODE_SERIALIZED and every call into it happens under mutex_.
// psdp keeps its own per-peer bookkeeping (pending operations, failed peers) that must change atomically
// with the UCX call that posts or completes an operation, and UCX runs completion callbacks inside
// ucp_worker_progress. One lock around both is simpler and no slower than UCX's MULTI-mode worker lock
// (a spinlock taken per call) plus a second lock of ours nested inside it.
//
// Wake-up: the sleeper sets sleeping_, progresses and arms the worker under the lock, then polls the event
// fd. A poster, after releasing the lock, signals the worker only if it sees sleeping_ set: while the
// progress side is busy no syscall is made per message. If the poster's post happened before the sleeper
// took the lock, the sleeper's own progress/arm sees it; otherwise the poster sees sleeping_ and its
// signal either makes ucp_worker_arm return BUSY or wakes the poll.
#pragma once

#include <poll.h>
#include <ucp/api/ucp.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"

namespace psdp::transport::ucx {

class WorkerLoop {
 public:
  // Empty progress() calls in a row before the progress side sleeps on the event fd while operations are
  // still outstanding: long enough to catch a reply in flight, short enough not to starve ranks that
  // share cores.
  static constexpr int kSpinPolls = 2048;
  // The same while this thread has lately waited for a core (base/cpu_contention.h): the peer a spin would
  // catch is then likely waiting for one too, and a thread that blocks gives its core to it.
  static constexpr int kContendedSpinPolls = 4;
  // Empty polls before sleeping, for the calling thread now: one of the two above.
  static int spinPolls();
  // Longest sleep while operations are outstanding: UCX's keepalive, which detects dead peers on shared
  // memory, runs only inside ucp_worker_progress.
  static constexpr int kMaxSleepWithOpsMs = 100;

  // `after_progress` runs under the lock after every ucp_worker_progress (bookkeeping of the owner).
  // Errors: system (the worker has no event fd: it was created without UCP_FEATURE_WAKEUP).
  static Result<std::unique_ptr<WorkerLoop>> create(ucp_worker_h worker, std::function<void()> after_progress);

  WorkerLoop(const WorkerLoop&) = delete;
  WorkerLoop& operator=(const WorkerLoop&) = delete;

  // A lock for a user thread about to call into the worker: it asks a spinning progress thread to step
  // aside, so posts are not starved by back-to-back progress calls.
  class PostLock {
   public:
    explicit PostLock(WorkerLoop& loop);

   private:
    std::unique_lock<std::mutex> lock_;
  };
  PostLock lockForPost() { return PostLock(*this); }

  // One ucp_worker_progress plus the owner's bookkeeping, under the lock. Returns UCX's event count.
  unsigned progress();

  // Operations posted and not yet completed; the progress thread spins only while this is not zero.
  void opStarted() { outstanding_.fetch_add(1, std::memory_order_seq_cst); }
  void opFinished() { outstanding_.fetch_sub(1, std::memory_order_relaxed); }
  uint64_t outstanding() const { return outstanding_.load(std::memory_order_seq_cst); }

  // For posters, after releasing the lock: wakes a sleeper, if any.
  void wakeSleeper();
  // Wakes a sleeper unconditionally (stop requests, peer failures reported from another thread).
  void signal();

  // Progresses once more and, if that found nothing, arms the worker and polls its event fd (and the
  // watched fds) for up to timeout_ms (-1: until an event or a signal).
  void sleep(int timeout_ms);

  // Fds that also end a sleep when they become readable (pidfds of peers, see peer_liveness.h). The owner
  // removes an fd once it has handled it: a readable fd left in the set would end every sleep at once.
  // The Locked form is for the after-progress hook, which runs under the lock.
  void setWatchedFds(const std::vector<int>& fds);
  void setWatchedFdsLocked(const std::vector<int>& fds);
  // Whether a watched fd ended a sleep since the last call.
  bool takeWatchedReady() { return watched_ready_.exchange(false, std::memory_order_acq_rel); }

  // Caller-mode driving: progresses until done() holds, spinning spinPolls() empty polls between sleeps on
  // the event fd. Returns false once the deadline passes with done() still false.
  bool driveUntil(const std::function<bool()>& done, const Deadline& deadline);

  bool postersWaiting() const { return posters_waiting_.load(std::memory_order_relaxed) != 0; }

  // A thread that waits for events by driving the worker itself (UcxTransport::waitEvents with a progress
  // thread) holds one of these meanwhile; the progress thread stands down while any is held, so that the
  // two neither take turns on the lock nor hand each completion over through a futex wake.
  class DriverScope {
   public:
    explicit DriverScope(WorkerLoop& loop);
    ~DriverScope();
    DriverScope(const DriverScope&) = delete;
    DriverScope& operator=(const DriverScope&) = delete;

   private:
    WorkerLoop& loop_;
  };
  // The same without a scope (Transport::beginDriving / endDriving).
  void beginDriving() { drivers_.fetch_add(1, std::memory_order_seq_cst); }
  void endDriving() {
    if (drivers_.fetch_sub(1, std::memory_order_seq_cst) == 1) wakeStandingDown();
  }
  bool driven() const { return drivers_.load(std::memory_order_seq_cst) != 0; }
  // For the progress thread: returns once no DriverScope is held or `stop` is set (wakeStandingDown).
  void standDown(const std::atomic<bool>& stop);
  void wakeStandingDown();

 private:
  WorkerLoop(ucp_worker_h worker, int event_fd, std::function<void()> after_progress);

  ucp_worker_h worker_;
  int event_fd_;  // owned by the worker
  std::function<void()> after_progress_;
  std::mutex mutex_;
  std::vector<pollfd> poll_set_;  // GUARDED_BY(mutex_): the event fd, then the watched fds
  std::atomic<bool> sleeping_{false};
  std::atomic<bool> watched_ready_{false};
  std::atomic<uint32_t> posters_waiting_{0};
  std::atomic<uint64_t> outstanding_{0};
  std::atomic<uint32_t> drivers_{0};  // futex word of standDown
};

}  // namespace psdp::transport::ucx
