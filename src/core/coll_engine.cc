#include "core/coll_engine.h"

#include <algorithm>

#include "base/recycled.h"

namespace psdp::core {
namespace {

// How long the progress thread waits on the transport in one round: bounded so that a destroy is noticed
// promptly even while a task waits for a silent peer.
constexpr double kThreadRoundSeconds = 0.05;
// How long a waiter whose request the thread is driving sleeps before it checks whether it could drive.
constexpr double kHandOverSeconds = 0.002;
// How long test() lets the transport progress in caller mode: a few polls of the worker, not a wait.
constexpr double kTestPollSeconds = 20e-6;

const Deadline& earlier(const Deadline& a, const Deadline& b) {
  return a.timePoint() <= b.timePoint() ? a : b;
}

}  // namespace

CollEngine::CollEngine(transport::Transport& transport, bool background, double timeout_s, size_t max_in_flight,
                       Logger log)
    : transport_(transport),
      background_(background),
      timeout_s_(timeout_s),
      max_in_flight_(std::max<size_t>(1, max_in_flight)),
      log_(std::move(log)) {
  queue_.reserve(max_in_flight_);
  // Request memory for a full queue and the post waiting for room, made now: posting then allocates nothing.
  std::vector<std::shared_ptr<Request>> warm;
  warm.reserve(max_in_flight_ + 1);
  for (size_t i = 0; i <= max_in_flight_; ++i) {
    warm.push_back(std::allocate_shared<Request>(RecyclingAllocator<Request>(), Request::Key(), nullptr));
  }
  if (background_) thread_ = std::thread([this] { threadMain(); });
}

CollEngine::~CollEngine() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard drive(drive_mutex_);
  failAll(Status::invalidUsage("the communicator was destroyed before the operation completed"), nullptr);
}

Result<std::shared_ptr<Request>> CollEngine::post(std::unique_ptr<coll::CollTask> task, bool wake_thread) {
  std::shared_ptr<Request> request =
      std::allocate_shared<Request>(RecyclingAllocator<Request>(), Request::Key(), std::move(task));
  Deadline deadline = Deadline::after(timeout_s_);
  while (true) {
    std::shared_ptr<Request> oldest;
    Status lost = transport_.failure();
    {
      std::lock_guard lock(mutex_);
      if (failure_.isOk() && !lost.isOk()) failure_ = lost;
      if (!failure_.isOk()) return failure_.withContext("the communicator failed earlier");
      if (queue_.size() < max_in_flight_) {
        queue_.push_back(request);
        break;
      }
      oldest = queue_.front();
    }
    // The oldest has started (tasks start in order, and nothing before it is left) and has its own deadline.
    if (wait(*oldest, deadline) == WaitResult::kTimedOut) {
      return Status::timeout(
          "{} operations of this communicator in flight (PSDP_MAX_IN_FLIGHT) and the oldest "
          "did not complete within {} s",
          max_in_flight_, timeout_s_);
    }
  }
  if (wake_thread) work_cv_.notify_one();
  return request;
}

bool CollEngine::test(Request& request) {
  if (request.isDone()) return true;
  if (!background_) {
    // Another thread driving makes the progress this call would have made; never wait for it.
    std::unique_lock drive(drive_mutex_, std::try_to_lock);
    if (drive.owns_lock()) driveOnce(nullptr);
  }
  return request.isDone();
}

WaitResult CollEngine::wait(Request& request, const Deadline& until) {
  while (background_ && !request.isDone()) {
    if (until.expired()) return WaitResult::kTimedOut;
    std::unique_lock drive(drive_mutex_, std::try_to_lock);
    if (drive.owns_lock()) {
      if (!request.isDone()) driveOnce(&until);
      continue;
    }
    // The thread is driving (requests posted earlier): wait for it, and look again now and then, since it
    // may go idle before this request is done.
    std::unique_lock lock(mutex_);
    Deadline slice = Deadline::after(kHandOverSeconds);
    done_cv_.wait_until(lock, earlier(until, slice).timePoint(), [&] { return request.isDone(); });
  }
  while (!request.isDone()) {
    if (until.expired()) return WaitResult::kTimedOut;
    std::lock_guard drive(drive_mutex_);
    if (!request.isDone()) driveOnce(&until);
  }
  return WaitResult::kDone;
}

Status CollEngine::failure() const {
  Status lost = transport_.failure();
  std::lock_guard lock(mutex_);
  return failure_.isOk() ? lost : failure_;
}

void CollEngine::abort(const Status& status) {
  // The transport completes every posted operation with `status` and bumps its event count: a driver
  // blocked in waitEvents wakes, finds transport_.failure() set and fails the queue (driveOnce).
  transport_.fail(status);
  // A background driver idling on work_cv_ with requests still queued (none started yet) is woken too.
  work_cv_.notify_all();
}

void CollEngine::threadMain() {
  while (true) {
    {
      std::unique_lock lock(mutex_);
      work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
    }
    std::lock_guard drive(drive_mutex_);
    Deadline round = Deadline::after(kThreadRoundSeconds);
    driveOnce(&round);
  }
}

void CollEngine::driveOnce(const Deadline* until) {
  // Read the counter before advancing, so that a completion landing after the check still wakes us.
  uint32_t seen = transport_.eventCount();
  Pass pass = advanceQueue();
  if (pass == Pass::kMoved) return;
  // The started tasks are the front of the queue (tasks start in order): each has its own deadline.
  std::shared_ptr<Request> oldest;
  const Deadline* earliest = nullptr;
  for (size_t i = 0;; ++i) {
    std::shared_ptr<Request> request = at(i);
    if (!request || !request->started_) break;
    coll::CollTask& task = *request->task_;
    if (task.deadline().expired()) {
      Status timeout = Status::timeout("{} timed out waiting for {}", task.describe(), task.waitingFor());
      task.abandon(timeout);
      failEverything(timeout, request);
      return;
    }
    if (!oldest) oldest = request;
    if (earliest == nullptr || task.deadline().timePoint() < earliest->timePoint()) earliest = &task.deadline();
  }
  if (!oldest) return;
  // The poll window of test() starts only now: advancing may take longer than the window itself, and the
  // transport must still get its turn. A task that yielded has local work left and is not waited for: the
  // transport gets only that short poll, so that the other tasks' messages move between its slices.
  Deadline poll = Deadline::after(kTestPollSeconds);
  const Deadline& wait_until = pass == Pass::kYielded ? poll : earlier(until != nullptr ? *until : poll, *earliest);
  // A lost peer fails the tasks even when they wait only on healthy ones: those may wait on the lost one. A
  // failure recorded after `seen` was read wakes the wait; one recorded before it (by the transport's
  // progress thread, between two rounds) bumped the count already and would let the wait run to the
  // deadline, so it is looked for first.
  Status waited = transport_.failure();
  if (waited.isOk()) {
    waited = transport_.waitEvents(seen, wait_until);
    if (waited.isOk() || waited.code() == PSDP_ERR_TIMEOUT) waited = transport_.failure();
  }
  if (waited.isOk()) return;
  oldest->task_->abandon(waited);
  failEverything(waited.withContext(oldest->task_->describe()), oldest);
}

// One pass over the queue in posting order: starts every task whose turn has come (in order: one that cannot
// start yet holds back the ones behind it) and advances every started one until it blocks or completes.
CollEngine::Pass CollEngine::advanceQueue() {
  bool moved = false, yielded = false;
  size_t i = 0, started = 0;
  while (std::shared_ptr<Request> request = at(i)) {
    coll::CollTask& task = *request->task_;
    if (!request->started_) {
      if (!task.canStart()) break;
      task.start(Deadline::after(timeout_s_));
      request->started_ = true;
      moved = true;
    }
    // As far as it goes: a task that moved can usually move again at once (its next fragment, its next round).
    // One that yielded has a slice of local work done and more to do: the others get their turn first.
    Result<coll::Progress> progress = coll::Progress::kAdvanced;
    for (int steps = 0; progress.isOk() && progress.value() == coll::Progress::kAdvanced; ++steps) {
      progress = task.advance();
      moved |= steps > 0 || (progress.isOk() && progress.value() != coll::Progress::kBlocked);
    }
    if (!progress.isOk()) {
      failEverything(progress.status(), request);
      return Pass::kMoved;
    }
    if (progress.value() == coll::Progress::kDone) {
      complete(request, Status::ok());  // leaves the queue: the next one is at i now
      continue;
    }
    yielded |= progress.value() == coll::Progress::kYielded;
    ++started;
    ++i;
  }
  // Alone, a task that yielded just goes on: there is nobody whose messages a poll would move.
  if (yielded && started > 1) return Pass::kYielded;
  return moved ? Pass::kMoved : Pass::kIdle;
}

std::shared_ptr<Request> CollEngine::at(size_t index) {
  std::lock_guard lock(mutex_);
  return index < queue_.size() ? queue_[index] : nullptr;
}

void CollEngine::complete(const std::shared_ptr<Request>& request, const Status& status) {
  {
    std::lock_guard lock(mutex_);
    auto it = std::find(queue_.begin(), queue_.end(), request);
    if (it != queue_.end()) queue_.erase(it);
    request->task_.reset();
    request->status_ = status;
    request->done_.store(true, std::memory_order_release);
  }
  done_cv_.notify_all();
}

void CollEngine::failEverything(const Status& status, const std::shared_ptr<Request>& failed) {
  transport_.fail(status);
  failAll(status, failed);
}

// The failed task carries the error itself; the others say why they failed with it.
void CollEngine::failAll(const Status& status, const std::shared_ptr<Request>& failed) {
  std::vector<std::shared_ptr<Request>> queued;
  {
    std::lock_guard lock(mutex_);
    if (failure_.isOk()) failure_ = status;
    queued.swap(queue_);
    queue_.reserve(max_in_flight_);
  }
  if (!queued.empty() && status.code() != PSDP_ERR_INVALID_USAGE) {
    log().error("collectives failed, {} queued operation(s) cancelled: {}", queued.size(), status.toString());
  }
  for (const std::shared_ptr<Request>& request : queued) {
    Status own = request == failed || (!failed && request == queued.front()) ? status
                 : request->started_ ? status.withContext("in flight when another operation failed")
                                     : status.withContext("not started, an earlier operation failed");
    complete(request, own);
  }
}

}  // namespace psdp::core
