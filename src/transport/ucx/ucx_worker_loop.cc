#include "transport/ucx/ucx_worker_loop.h"

#include <linux/futex.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <ctime>

#include <utility>

#include "base/cpu_contention.h"
#include "transport/ucx/ucx_status.h"

namespace psdp::transport::ucx {

Result<std::unique_ptr<WorkerLoop>> WorkerLoop::create(ucp_worker_h worker, std::function<void()> after_progress) {
  int event_fd = -1;
  Status status = ucsStatus(ucp_worker_get_efd(worker, &event_fd), "get worker event fd");
  if (!status.isOk()) return Status::system("{}", status.message());
  return std::unique_ptr<WorkerLoop>(new WorkerLoop(worker, event_fd, std::move(after_progress)));
}

WorkerLoop::WorkerLoop(ucp_worker_h worker, int event_fd, std::function<void()> after_progress)
    : worker_(worker), event_fd_(event_fd), after_progress_(std::move(after_progress)) {
  poll_set_.push_back(pollfd{.fd = event_fd_, .events = POLLIN, .revents = 0});
}

void WorkerLoop::setWatchedFds(const std::vector<int>& fds) {
  std::lock_guard<std::mutex> lock(mutex_);
  setWatchedFdsLocked(fds);
}

void WorkerLoop::setWatchedFdsLocked(const std::vector<int>& fds) {
  poll_set_.resize(1);
  for (int fd : fds) poll_set_.push_back(pollfd{.fd = fd, .events = POLLIN, .revents = 0});
}

WorkerLoop::PostLock::PostLock(WorkerLoop& loop) {
  loop.posters_waiting_.fetch_add(1, std::memory_order_relaxed);
  lock_ = std::unique_lock<std::mutex>(loop.mutex_);
  loop.posters_waiting_.fetch_sub(1, std::memory_order_relaxed);
}

unsigned WorkerLoop::progress() {
  std::lock_guard<std::mutex> lock(mutex_);
  unsigned events = ucp_worker_progress(worker_);
  after_progress_();
  return events;
}

void WorkerLoop::wakeSleeper() {
  if (sleeping_.load(std::memory_order_seq_cst)) signal();
}

void WorkerLoop::signal() {
  // ucp_worker_signal is documented safe from any thread in every thread mode; it writes the worker's
  // eventfd, which also makes a later ucp_worker_arm return BUSY.
  (void)ucp_worker_signal(worker_);
}

void WorkerLoop::sleep(int timeout_ms) {
  sleeping_.store(true, std::memory_order_seq_cst);
  bool armed = false;
  // A copy taken under the lock: the set changes only at connect, and poll() must run without the lock.
  // At most a handful of fds; the vector's capacity is reused from sleep to sleep.
  thread_local std::vector<pollfd> set;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Draining before arming is UCX's contract: the fd only reports events that arrive after the arm.
    if (ucp_worker_progress(worker_) == 0) armed = ucp_worker_arm(worker_) == UCS_OK;
    after_progress_();
    set = poll_set_;
  }
  if (armed && poll(set.data(), set.size(), timeout_ms) > 0) {
    for (size_t i = 1; i < set.size(); ++i) {
      if (set[i].revents != 0) watched_ready_.store(true, std::memory_order_release);
    }
  }
  sleeping_.store(false, std::memory_order_relaxed);
}

WorkerLoop::DriverScope::DriverScope(WorkerLoop& loop) : loop_(loop) {
  loop_.beginDriving();
}

WorkerLoop::DriverScope::~DriverScope() {
  loop_.endDriving();
}

void WorkerLoop::standDown(const std::atomic<bool>& stop) {
  while (!stop.load(std::memory_order_acquire)) {
    uint32_t drivers = drivers_.load(std::memory_order_seq_cst);
    if (drivers == 0) return;
    // Returns at once if the count changed since the load, so no wake-up is lost; the slice bounds the wait
    // for a stop request that lands between the checks above and the sleep.
    timespec slice{0, 50'000'000};
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&drivers_), FUTEX_WAIT_PRIVATE, drivers, &slice, nullptr, 0);
  }
}

void WorkerLoop::wakeStandingDown() {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&drivers_), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

int WorkerLoop::spinPolls() {
  return cpuContended() ? kContendedSpinPolls : kSpinPolls;
}

bool WorkerLoop::driveUntil(const std::function<bool()>& done, const Deadline& deadline) {
  int idle_polls = 0;
  int spin_polls = kSpinPolls;
  while (!done()) {
    if (deadline.expired()) return false;
    if (progress() > 0) {
      idle_polls = 0;
      continue;
    }
    if (idle_polls == 0) spin_polls = spinPolls();
    if (++idle_polls < spin_polls) continue;
    idle_polls = 0;
    sleep(deadline.remainingMs(kMaxSleepWithOpsMs));
  }
  return true;
}

}  // namespace psdp::transport::ucx
