#include "transport/ucx/ucx_event_counter.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <ctime>

namespace psdp::transport::ucx {
namespace {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) && std::atomic<uint32_t>::is_always_lock_free,
              "the futex word must be a plain 32-bit integer");

// Sleeps are cut into slices of at most this long so that a huge deadline never overflows a timespec.
constexpr double kMaxSliceSeconds = 3600.0;

uint32_t* futexWord(std::atomic<uint32_t>& word) {
  return reinterpret_cast<uint32_t*>(&word);
}

timespec toTimespec(double seconds) {
  double whole = std::floor(seconds);
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(whole);
  ts.tv_nsec = static_cast<long>((seconds - whole) * 1e9);
  return ts;
}

}  // namespace

void EventCounter::publish() {
  uint32_t now = count_.load(std::memory_order_seq_cst);
  if (now == published_) return;
  published_ = now;
  if (waiters_.load(std::memory_order_seq_cst) == 0) return;
  syscall(SYS_futex, futexWord(count_), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

Status EventCounter::wait(uint32_t seen, const Deadline& deadline) {
  waiters_.fetch_add(1, std::memory_order_seq_cst);
  Status result;
  while (count_.load(std::memory_order_seq_cst) == seen) {
    double remaining = deadline.remainingSeconds();
    if (remaining <= 0) {
      result = Status::timeout("no transport event before the deadline");
      break;
    }
    timespec slice = toTimespec(std::min(remaining, kMaxSliceSeconds));
    long rc = syscall(SYS_futex, futexWord(count_), FUTEX_WAIT_PRIVATE, seen, &slice, nullptr, 0);
    if (rc != 0 && errno != EAGAIN && errno != EINTR && errno != ETIMEDOUT) {
      result = Status::fromErrno(errno, "futex wait on the transport event count");
      break;
    }
  }
  waiters_.fetch_sub(1, std::memory_order_seq_cst);
  return result;
}

}  // namespace psdp::transport::ucx
