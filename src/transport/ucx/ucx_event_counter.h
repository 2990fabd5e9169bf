// The event counter behind Transport::eventCount()/waitEvents(): a 32-bit word bumped after every completion,
// which user threads sleep on with a futex while a progress thread completes operations.
#pragma once

#include <atomic>
#include <cstdint>

#include "base/deadline.h"
#include "base/status.h"

namespace psdp::transport::ucx {

class EventCounter {
 public:
  uint32_t value() const { return count_.load(std::memory_order_acquire); }

  // Counts one event. Sleepers are woken by the next publish(), so that a burst of completions found by one
  // ucp_worker_progress costs at most one FUTEX_WAKE.
  void bump() { count_.fetch_add(1, std::memory_order_seq_cst); }

  // Wakes sleepers if events were counted since the last publish() and someone sleeps. No syscall when
  // nobody waits. REQUIRES: calls are serialised (the worker lock).
  void publish();

  // Sleeps (futex) until value() != seen, or returns timeout once the deadline has passed.
  // Errors: timeout, system (futex failed).
  Status wait(uint32_t seen, const Deadline& deadline);

 private:
  // Dekker-style pairing: a sleeper increments waiters_ and then re-reads count_; publish() reads waiters_
  // after the bump (both seq_cst), so either the sleeper sees the new count or publish() sees the sleeper.
  // FUTEX_WAIT re-checks the word in the kernel, closing the window between the read and the sleep.
  std::atomic<uint32_t> count_{0};
  std::atomic<uint32_t> waiters_{0};
  uint32_t published_ = 0;
};

}  // namespace psdp::transport::ucx
