#include "coll/progress_driver.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>

namespace psdp::coll {
namespace {

// How long the progress thread waits on the transport in one round: bounded so that a destroy is noticed
// promptly even while a task waits for a silent peer.
constexpr double kThreadRoundSeconds = 0.05;
// How long test() lets the transport progress in caller mode: a few polls of the worker, not a wait.
constexpr double kTestPollSeconds = 20e-6;
// How long a waiter that found the drive taken sleeps before it looks again, should no hand-over wake it.
constexpr double kHandOverSeconds = 0.002;
// How long the thread keeps the transport's thread aside once out of work (see threadMain).
constexpr std::chrono::milliseconds kIdleLinger{1};

const Deadline& earlier(const Deadline& a, const Deadline& b) {
  return a.timePoint() <= b.timePoint() ? a : b;
}

}  // namespace

ProgressDriver::ProgressDriver(transport::Transport& shared, bool background, Logger log)
    : shared_(shared), background_(background), log_(std::move(log)) {
  if (background_) thread_ = std::thread([this] { threadMain(); });
}

ProgressDriver::~ProgressDriver() {
  stopThread();
}

void ProgressDriver::stopThread() {
  std::lock_guard join(join_mutex_);
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  shared_.wake();  // out of a wait on the transport, if it is in one: it checks stopping_ within a round
  if (thread_.joinable()) thread_.join();
}

void ProgressDriver::attach(TaskQueue& queue) {
  std::lock_guard drive(drive_mutex_);
  std::lock_guard lock(mutex_);
  queues_.push_back(&queue);
}

// REQUIRES: drive_mutex_ (the queue's destructor holds it).
void ProgressDriver::detach(TaskQueue& queue) {
  std::lock_guard lock(mutex_);
  queues_.erase(std::remove(queues_.begin(), queues_.end(), &queue), queues_.end());
  workDoneLocked();
}

bool ProgressDriver::anyWorkLocked() const {
  return std::any_of(queues_.begin(), queues_.end(), [](const TaskQueue* q) { return q->hasWorkLocked(); });
}

void ProgressDriver::threadMain() {
  // Named for top -H, gdb and perf (at most 15 characters).
  pthread_setname_np(pthread_self(), "psdp-driver");
  while (true) {
    {
      std::unique_lock lock(mutex_);
      while (true) {
        if (stopping_) {
          releaseDriveLocked();
          return;
        }
        if (!waitersPresent() && anyWorkLocked()) break;
        if (!drive_held_) {
          work_cv_.wait(lock);
          continue;
        }
        // Holding the transport's thread aside, for waiters that drive or because work ran out lately. Out
        // of work, a caller posting its next batch (or the next blocking call) is likely to add more soon:
        // the transport's thread takes over only once the queues have been empty for kIdleLinger. Nobody
        // wakes this thread when the queues empty (that was a wake-up, on another core, per blocking call);
        // it looks again every kIdleLinger while it holds the transport's thread aside.
        if (!anyWorkLocked() && std::chrono::steady_clock::now() - idle_since_ >= kIdleLinger) {
          releaseDriveLocked();
          continue;
        }
        work_cv_.wait_for(lock, kIdleLinger);
      }
    }
    {
      std::lock_guard drive(drive_mutex_);
      if (waitersPresent()) continue;
      Deadline round = Deadline::after(kThreadRoundSeconds);
      driveOnce(&round, /*yield_to_waiters=*/true);
    }
    if (waitersPresent()) {
      std::lock_guard lock(mutex_);
      ++handovers_;
      done_cv_.notify_all();
    }
  }
}

void ProgressDriver::workQueuedLocked() {
  if (drive_held_) return;
  drive_held_ = true;
  shared_.beginDriving();
  // The thread, asleep for good while it held nothing, now has the drive to let go of (threadMain): once
  // per busy period, not per call.
  if (background_) work_cv_.notify_one();
}

void ProgressDriver::workDoneLocked() {
  if (anyWorkLocked()) return;
  // The thread lets go after a linger (threadMain); without it nobody else would.
  if (background_) {
    idle_since_ = std::chrono::steady_clock::now();
  } else {
    releaseDriveLocked();
  }
}

void ProgressDriver::releaseDriveLocked() {
  if (!drive_held_) return;
  drive_held_ = false;
  shared_.endDriving();
}

ProgressDriver::WaiterScope::WaiterScope(ProgressDriver& driver) : driver_(driver) {
  driver_.waiters_.fetch_add(1, std::memory_order_seq_cst);
}

// Under mutex_, so that the thread cannot check for waiters, miss this leave and then sleep through it.
ProgressDriver::WaiterScope::~WaiterScope() {
  std::lock_guard lock(driver_.mutex_);
  ++driver_.handovers_;
  if (driver_.waiters_.fetch_sub(1, std::memory_order_seq_cst) > 1) {
    driver_.done_cv_.notify_all();
  } else if (driver_.anyWorkLocked()) {
    driver_.work_cv_.notify_one();
  }
}

WaitResult ProgressDriver::waitAll(std::span<Request* const> requests, const Deadline& until) {
  size_t pending = 0;  // requests before it are done
  auto donePrefix = [&] {
    while (pending < requests.size() && requests[pending]->isDone()) ++pending;
    return pending == requests.size();
  };
  if (donePrefix()) return WaitResult::kDone;
  WaiterScope waiter(*this);
  while (!donePrefix()) {
    if (until.expired()) return WaitResult::kTimedOut;
    std::unique_lock drive(drive_mutex_, std::try_to_lock);
    if (drive.owns_lock()) {
      // Another driver may have completed them before this one took the drive.
      if (!donePrefix()) driveOnce(&until);
    } else {
      // The background thread, now asked to step aside, or another waiter drives.
      awaitDrive(*requests[pending], until);
    }
  }
  return WaitResult::kDone;
}

void ProgressDriver::awaitDrive(const Request& request, const Deadline& until) {
  std::unique_lock lock(mutex_);
  const uint64_t handovers = handovers_;
  // The waiter is counted already: a thread that read the event count before this wake sees it change, and
  // one that reads it after sees the waiter (driveOnce) and does not wait on the transport.
  shared_.wake();
  Deadline slice = Deadline::after(kHandOverSeconds);
  done_cv_.wait_until(lock, earlier(until, slice).timePoint(),
                      [&] { return request.isDone() || handovers_ != handovers; });
}

void ProgressDriver::driveOnce(const Deadline* until, bool yield_to_waiters) {
  // Read the counter before advancing, so that a completion landing after the check still wakes us.
  uint32_t seen = shared_.eventCount();
  // A failure recorded during the pass is judged only after another pass: a member that reports its team
  // failed right after completing its part (a rank destroying its communicator) has sent everything this
  // rank needed before the report, and the next pass lets the tasks finish with it.
  uint32_t failures_seen = shared_.failureEpoch();
  bool moved = false, yielded = false;
  size_t started = 0;
  for (TaskQueue* queue : queues_) {
    TaskQueue::PassResult result = queue->advance();
    moved |= result.pass == TaskQueue::Pass::kMoved;
    yielded |= result.pass == TaskQueue::Pass::kYielded;
    started += result.started;
  }
  // Alone, a task that yielded just goes on: there is nobody whose messages a poll would move.
  if (moved || (yielded && started <= 1) || shared_.failureEpoch() != failures_seen) return;
  // A queue that fails completes its requests, which may free the deadline `earliest` points to: the next
  // round looks at the others.
  const Deadline* earliest = nullptr;
  for (TaskQueue* queue : queues_) {
    if (queue->failIfExpiredOrLost(&earliest)) return;
  }
  if (earliest == nullptr || (yield_to_waiters && waitersPresent())) return;
  // The poll window of test() starts only now: advancing may take longer than the window itself, and the
  // transport must still get its turn. A task that yielded has local work left and is not waited for: the
  // transport gets only that short poll, so that the other tasks' messages move between its slices. A
  // failure recorded after `seen` was read wakes the wait; one recorded before it was looked for above.
  Deadline poll = Deadline::after(kTestPollSeconds);
  const Deadline& wait_until = yielded ? poll : earlier(until != nullptr ? *until : poll, *earliest);
  Status waited = shared_.waitEvents(seen, wait_until);
  // Anything but a timeout is a fatal error of the shared transport, which every team shares. Failures of
  // teams are judged by the next round, after its pass.
  if (waited.isOk() || waited.code() == PSDP_ERR_TIMEOUT) return;
  for (TaskQueue* queue : queues_) queue->failIfLost(waited);
}

}  // namespace psdp::coll
