#include "base/cpu_contention.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>

namespace psdp {
namespace {

uint64_t monotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

// The calling thread's run-queue wait so far: the second field of "<run ns> <wait ns> <timeslices>", or false
// where it cannot be read. The file is opened per sample, not kept: a library leaves no descriptor behind.
bool runQueueWaitNs(uint64_t* wait_ns) {
  const int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char text[96];
  const ssize_t got = read(fd, text, sizeof(text) - 1);
  close(fd);
  if (got <= 0) return false;
  text[got] = '\0';
  char* end = nullptr;
  std::strtoull(text, &end, 10);
  if (end == text) return false;
  const char* wait = end;
  *wait_ns = std::strtoull(wait, &end, 10);
  return end != wait;
}

}  // namespace

void ContentionGauge::sample(uint64_t now_ns, uint64_t wait_ns) {
  if (sampled_ && now_ns > last_ns_ && wait_ns >= last_wait_ns_) {
    const double share = static_cast<double>(wait_ns - last_wait_ns_) / static_cast<double>(now_ns - last_ns_);
    if (share > kContendedShare) {
      contended_ = true;
      contended_until_ns_ = now_ns + kHoldNs;
    }
  }
  sampled_ = true;
  last_ns_ = now_ns;
  last_wait_ns_ = wait_ns;
}

bool cpuContended() {
  thread_local ContentionGauge gauge;
  const uint64_t now = monotonicNs();
  if (gauge.due(now)) {
    uint64_t wait = 0;
    if (runQueueWaitNs(&wait)) gauge.sample(now, wait);
  }
  return gauge.contended(now);
}

}  // namespace psdp
