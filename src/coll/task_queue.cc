#include "coll/task_queue.h"

#include <algorithm>

#include "base/recycled.h"
#include "base/trace.h"
#include "coll/progress_driver.h"

namespace psdp::coll {
namespace {

// Sequence numbers are 32-bit counters that may wrap: a is before b when b is less than half the range ahead.
bool seqBefore(uint32_t a, uint32_t b) {
  return static_cast<int32_t>(b - a) > 0;
}

}  // namespace

TaskQueue::TaskQueue(ProgressDriver& driver, transport::Transport& team, double timeout_s, size_t max_in_flight,
                     Logger log, uint32_t track)
    : driver_(driver),
      team_(team),
      timeout_s_(timeout_s),
      max_in_flight_(std::max<size_t>(1, max_in_flight)),
      log_(std::move(log)),
      track_(track) {
  queue_.reserve(max_in_flight_);
  // Request memory for a full queue and the post waiting for room, made now: posting then allocates nothing.
  std::vector<std::shared_ptr<Request>> warm;
  warm.reserve(max_in_flight_ + 1);
  for (size_t i = 0; i <= max_in_flight_; ++i) {
    warm.push_back(
        std::allocate_shared<Request>(RecyclingAllocator<Request>(), Request::Key(), std::unique_ptr<CollTask>()));
  }
  driver_.attach(*this);
}

TaskQueue::~TaskQueue() {
  std::lock_guard drive(driver_.drive_mutex_);
  failAll(Status::invalidUsage("the communicator was destroyed before the operation completed"), nullptr);
  driver_.detach(*this);
}

Result<std::shared_ptr<Request>> TaskQueue::post(std::unique_ptr<CollTask> task, bool wake_thread) {
  std::shared_ptr<Request> request =
      std::allocate_shared<Request>(RecyclingAllocator<Request>(), Request::Key(), std::move(task));
  PSDP_RETURN_IF_ERROR(enqueue(request, wake_thread));
  return request;
}

Status TaskQueue::postAfter(std::shared_ptr<Request> awaited) {
  return enqueue(std::allocate_shared<Request>(RecyclingAllocator<Request>(), Request::Key(), std::move(awaited)),
                 /*wake_thread=*/true);
}

Result<std::shared_ptr<Request>> TaskQueue::postHook(void (*fn)(void*), void* arg) {
  std::shared_ptr<Request> request =
      std::allocate_shared<Request>(RecyclingAllocator<Request>(), Request::Key(), fn, arg);
  PSDP_RETURN_IF_ERROR(enqueue(request, /*wake_thread=*/true));
  return request;
}

Status TaskQueue::enqueue(const std::shared_ptr<Request>& request, bool wake_thread) {
  Deadline deadline = Deadline::after(timeout_s_);
  while (true) {
    std::shared_ptr<Request> oldest;
    Status lost = team_.failure();
    {
      std::lock_guard lock(driver_.mutex_);
      if (failure_.isOk() && !lost.isOk()) failure_ = lost;
      if (!failure_.isOk()) return failure_.withContext("the communicator failed earlier");
      if (queue_.size() < max_in_flight_) {
        if (request->task_) {
          if (std::optional<uint32_t> seq = request->task_->seq()) last_posted_seq_ = *seq;
        }
        queue_.push_back(request);
        driver_.workQueuedLocked();
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
  if (wake_thread) driver_.work_cv_.notify_one();
  // Whoever drives now (the thread, or a caller waiting on another team of the context) may be asleep on
  // the transport with nothing of this task posted yet: wake it, so that it starts the task.
  std::unique_lock driving(driver_.drive_mutex_, std::try_to_lock);
  if (!driving.owns_lock()) team_.wake();
  return Status::ok();
}

bool TaskQueue::test(Request& request) {
  if (request.isDone()) return true;
  if (!driver_.background()) {
    // Another thread driving makes the progress this call would have made; never wait for it.
    std::unique_lock drive(driver_.drive_mutex_, std::try_to_lock);
    if (drive.owns_lock()) driver_.driveOnce(nullptr);
  }
  return request.isDone();
}

// Whoever waits drives, one thread at a time; the others sleep until their request is done or the drive is
// handed over, never on the drive lock itself: a driver sleeping in the transport until an event (up to its
// own task's deadline) may re-take the lock for round after round, and a thread blocked on the lock would
// not return even once its request were done, while the operations it has yet to post are what the peers
// are waiting for (found with two threads per process in caller mode, each on a team of its own).
WaitResult TaskQueue::wait(Request& request, const Deadline& until) {
  Request* const one[] = {&request};
  return driver_.waitAll(one, until);
}

Status TaskQueue::failure() const {
  Status lost = team_.failure();
  std::lock_guard lock(driver_.mutex_);
  return failure_.isOk() ? lost : failure_;
}

bool TaskQueue::idle() const {
  std::lock_guard lock(driver_.mutex_);
  return queue_.empty();
}

void TaskQueue::abort(const Status& status) {
  // The team's transport completes every posted operation of the team with `status` and bumps the event
  // count: a driver blocked in waitEvents wakes, finds the team failed and fails the queue (driveOnce).
  team_.fail(status);
  // A background driver idling on work_cv_ with requests still queued (none started yet) is woken too.
  driver_.work_cv_.notify_all();
}

// One pass over the queue in posting order: starts every task whose turn has come (in order: one that cannot
// start yet holds back the ones behind it) and advances every started one until it blocks or completes.
TaskQueue::PassResult TaskQueue::advance() {
  bool moved = false, yielded = false;
  size_t i = 0, started = 0;
  while (std::shared_ptr<Request> request = at(i)) {
    if (draining_ && heldByDrain(*request)) break;
    if (request->hook_ != nullptr) {
      request->hook_(request->hook_arg_);
      complete(request, Status::ok());  // leaves the queue: the next one is at i now
      moved = true;
      continue;
    }
    if (!request->task_) {
      // A gate: it holds back the requests behind it, and passes on the failure of what it waits for. It
      // waits at most the timeout from its turn, so that a cycle of gates (a caller's bug) cannot hang.
      if (!request->awaited_->isDone()) {
        if (!request->started_) {
          request->started_ = true;
          request->gate_deadline_ = Deadline::after(timeout_s_);
        }
        break;
      }
      const Status& awaited = request->awaited_->status();
      if (!awaited.isOk()) {
        failEverything(awaited.withContext("an operation this communicator was ordered after (psdp_comm_after) failed"),
                       request);
        return {Pass::kMoved, 0};
      }
      complete(request, Status::ok());  // leaves the queue: the next one is at i now
      moved = true;
      continue;
    }
    CollTask& task = *request->task_;
    if (!request->started_) {
      if (!task.canStart()) break;
      task.start(Deadline::after(timeout_s_));
      request->started_ = true;
      request->begin_ns_ = trace::nowNs();
      moved = true;
    }
    // As far as it goes: a task that moved can usually move again at once (its next fragment, its next round).
    // One that yielded has a slice of local work done and more to do: the others get their turn first.
    Result<Progress> progress = Progress::kAdvanced;
    for (int steps = 0; progress.isOk() && progress.value() == Progress::kAdvanced; ++steps) {
      progress = task.advance();
      moved |= steps > 0 || (progress.isOk() && progress.value() != Progress::kBlocked);
    }
    if (!progress.isOk() && progress.status().code() == PSDP_ERR_MISMATCH && task.seq() && !draining_) {
      // The operations before this one matched everywhere and may still be running here or on slower ranks:
      // they finish first, on every rank (the members are told), and only then does the team fail. Failing
      // it now would fail them too where they still run, and a call that matched would return mismatch.
      team_.drain(*task.seq(), progress.status());
      startDrain(*task.seq(), progress.status());
      return {Pass::kMoved, started};
    }
    if (!progress.isOk()) {
      // Where the team failed (a member lost or reporting), that is the cause, named in the team's ranks;
      // the task's error (a transfer to a lost peer, a read of its memory) is its echo. The peer it names
      // may itself have left over an earlier failure: the transport looks for that first.
      team_.refreshFailures();
      Status team_failure = team_.failure();
      failEverything(team_failure.isOk() ? progress.status() : team_failure.withContext(task.describe()), request);
      return {Pass::kMoved, 0};
    }
    if (progress.value() == Progress::kDone) {
      complete(request, Status::ok());  // leaves the queue: the next one is at i now
      continue;
    }
    yielded |= progress.value() == Progress::kYielded;
    ++started;
    ++i;
  }
  return {yielded ? Pass::kYielded : moved ? Pass::kMoved : Pass::kIdle, started};
}

bool TaskQueue::failIfExpiredOrLost(const Deadline** earliest) {
  // First, before *earliest points into a request that failing would free.
  if (failIfLost(Status::ok())) return true;
  // The started tasks are the front of the queue (tasks start in order): each has its own deadline.
  for (size_t i = 0;; ++i) {
    std::shared_ptr<Request> request = at(i);
    if (!request || !request->started_) break;
    if (!request->task_) {
      // A gate whose turn has come; nothing behind it has started.
      if (request->gate_deadline_.expired()) {
        failEverything(Status::timeout("waited {} s for an operation this communicator was ordered after "
                                       "(psdp_comm_after) to complete",
                                       timeout_s_),
                       request);
        return true;
      }
      if (*earliest == nullptr || request->gate_deadline_.timePoint() < (*earliest)->timePoint()) {
        *earliest = &request->gate_deadline_;
      }
      break;
    }
    CollTask& task = *request->task_;
    if (task.deadline().expired()) {
      Status timeout =
          Status::timeout("{} timed out waiting for {}{}", task.describe(), task.waitingFor(), probeOtherRanks());
      task.abandon(timeout);
      failEverything(timeout, request);
      return true;
    }
    if (*earliest == nullptr || task.deadline().timePoint() < (*earliest)->timePoint()) *earliest = &task.deadline();
  }
  return false;
}

// A timed-out task names what it waited for, which in a ring is a neighbour, whoever hangs: every other
// rank is asked whether it is alive, and the ones that do not answer are named too. The probe takes at most
// a tenth of the timeout (between 50 ms and 1 s); live ranks answer within microseconds of their next
// progress.
std::string TaskQueue::probeOtherRanks() {
  const double seconds = std::clamp(timeout_s_ / 10, 0.05, 1.0);
  std::vector<transport::SilentPeer> silent = team_.probePeers({}, seconds);
  if (silent.empty()) return fmt::format("; every other rank answered a liveness probe within {} s", seconds);
  std::string ranks, stopped;
  for (const transport::SilentPeer& peer : silent) {
    ranks += fmt::format("{}{}", ranks.empty() ? "" : ", ", peer.rank);
    if (peer.stopped) stopped += fmt::format("{}{}", stopped.empty() ? "" : ", ", peer.rank);
  }
  return fmt::format("; rank{} {} did not answer a liveness probe within {} s{}", silent.size() > 1 ? "s" : "", ranks,
                     seconds,
                     stopped.empty() ? " (hung, unreachable, or not calling into psdp in caller progress mode)"
                                     : fmt::format(" (stopped by a signal: {})", stopped));
}

void TaskQueue::startDrain(uint32_t from, const Status& reason) {
  if (draining_) return;
  draining_ = true;
  drain_from_ = from;
  drain_reason_ = reason;
  log().debug("operation #{} mismatched: the operations before it finish first: {}", from, reason.toString());
}

bool TaskQueue::heldByDrain(const Request& request) const {
  if (!request.task_) return false;
  std::optional<uint32_t> seq = request.task_->seq();
  return seq && !seqBefore(*seq, drain_from_);
}

bool TaskQueue::failIfDrained() {
  std::shared_ptr<Request> failed;  // the mismatched operation, if this rank has posted it
  {
    std::lock_guard lock(driver_.mutex_);
    // Operations before the drain point that this rank has yet to post will be posted: wait for them too.
    const bool all_posted = drain_from_ == 0 || (last_posted_seq_ && !seqBefore(*last_posted_seq_ + 1, drain_from_));
    const bool before_left = !queue_.empty() && !heldByDrain(*queue_.front());
    if (!all_posted || before_left) return false;
    for (const std::shared_ptr<Request>& request : queue_) {
      if (request->task_ && request->task_->seq() == drain_from_) failed = request;
    }
  }
  team_.failDrained(drain_reason_);
  failAll(drain_reason_, failed);
  return true;
}

// A lost member fails the tasks even when they wait only on healthy ones: those may wait on the lost one.
bool TaskQueue::failIfLost(const Status& fatal) {
  if (fatal.isOk() && !draining_) {
    uint32_t epoch = team_.failureEpoch();
    if (epoch != drain_checked_epoch_) {
      drain_checked_epoch_ = epoch;
      if (std::optional<std::pair<uint32_t, Status>> point = team_.drainPoint())
        startDrain(point->first, point->second);
    }
  }
  if (fatal.isOk() && draining_ && team_.failure().isOk() && failIfDrained()) return true;
  Status lost = fatal.isOk() ? team_.failure() : fatal;
  if (lost.isOk()) return false;
  std::shared_ptr<Request> oldest = at(0);
  if (!oldest) {
    // Nothing queued: the next post or checkUsable() reports it.
    return false;
  }
  if (oldest->started_ && oldest->task_) {
    oldest->task_->abandon(lost);
    lost = lost.withContext(oldest->task_->describe());
  }
  failEverything(lost, oldest);
  return true;
}

std::shared_ptr<Request> TaskQueue::at(size_t index) {
  std::lock_guard lock(driver_.mutex_);
  return index < queue_.size() ? queue_[index] : nullptr;
}

void TaskQueue::complete(const std::shared_ptr<Request>& request, const Status& status) {
  const uint64_t end_ns = trace::nowNs();
  // Collectives only (gates and hooks take no time of their own), formatted only while tracing.
  if (trace::on() && request->started_ && request->task_) {
    trace::slice(track_, status.isOk() ? request->task_->describe() : "failed: " + request->task_->describe(),
                 request->begin_ns_, end_ns);
  }
  {
    std::lock_guard lock(driver_.mutex_);
    auto it = std::find(queue_.begin(), queue_.end(), request);
    if (it != queue_.end()) queue_.erase(it);
    driver_.workDoneLocked();
    request->task_.reset();
    request->awaited_.reset();
    request->hook_ = nullptr;
    request->status_ = status;
    request->end_ns_ = end_ns;
    request->done_.store(true, std::memory_order_release);
  }
  driver_.done_cv_.notify_all();
}

void TaskQueue::failEverything(const Status& status, const std::shared_ptr<Request>& failed) {
  team_.fail(status);
  failAll(status, failed);
}

// The failed task carries the error itself; the others say why they failed with it.
void TaskQueue::failAll(const Status& status, const std::shared_ptr<Request>& failed) {
  std::vector<std::shared_ptr<Request>> queued;
  {
    std::lock_guard lock(driver_.mutex_);
    if (failure_.isOk()) failure_ = status;
    queued.swap(queue_);
    queue_.reserve(max_in_flight_);
    driver_.workDoneLocked();
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

}  // namespace psdp::coll
