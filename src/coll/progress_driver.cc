#include "coll/progress_driver.h"

#include <algorithm>

namespace psdp::coll {
namespace {

// How long the progress thread waits on the transport in one round: bounded so that a destroy is noticed
// promptly even while a task waits for a silent peer.
constexpr double kThreadRoundSeconds = 0.05;
// How long test() lets the transport progress in caller mode: a few polls of the worker, not a wait.
constexpr double kTestPollSeconds = 20e-6;

const Deadline& earlier(const Deadline& a, const Deadline& b) {
  return a.timePoint() <= b.timePoint() ? a : b;
}

}  // namespace

ProgressDriver::ProgressDriver(transport::Transport& shared, bool background, Logger log)
    : shared_(shared), background_(background), log_(std::move(log)) {
  if (background_) thread_ = std::thread([this] { threadMain(); });
}

ProgressDriver::~ProgressDriver() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_cv_.notify_all();
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
}

bool ProgressDriver::anyWorkLocked() const {
  return std::any_of(queues_.begin(), queues_.end(), [](const TaskQueue* q) { return q->hasWorkLocked(); });
}

void ProgressDriver::threadMain() {
  while (true) {
    {
      std::unique_lock lock(mutex_);
      work_cv_.wait(lock, [&] { return stopping_ || anyWorkLocked(); });
      if (stopping_) return;
    }
    std::lock_guard drive(drive_mutex_);
    Deadline round = Deadline::after(kThreadRoundSeconds);
    driveOnce(&round);
  }
}

void ProgressDriver::driveOnce(const Deadline* until) {
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
  if (earliest == nullptr) return;
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
