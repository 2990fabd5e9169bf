// Whether the calling thread has lately had to wait for a core: the host's cores are oversubscribed (a
// framework's own threads, other jobs, more ranks than cores). A wait that spins on polls before it blocks
// then only takes the core from the peer it waits for, or from the threads it competes with: measured with
// two ranks and two busy shell loops on two cores, a 1 MiB all-reduce ran 3-4x faster when its waits
// blocked after 4 empty polls rather than 2048. On a quiet host the spin catches replies without a wake-up,
// so the waits ask this first (transport/ucx/ucx_worker_loop.h).
//
// The measure is the kernel's own: the time the thread spent runnable but waiting for a core
// (/proc/thread-self/schedstat, in nanoseconds), as a share of the wall time between two samples.
#pragma once

#include <cstdint>

namespace psdp {

// The decision, from samples of (monotonic time, run-queue wait so far), both in nanoseconds: contended once
// the wait grew by more than kContendedShare of the time between two samples at least kSamplePeriodNs
// apart, and for kHoldNs after; a thread that blocks instead of spinning waits less, and without the hold
// the answer would flip back and forth. The period is long enough that one preemption (by this process's
// own progress thread, which looks in every millisecond) is no contention: over 2 ms, a few hundred
// microseconds were, and a rank of a quiet 2-rank run then blocked in 19-100% of its waits (7 of 16 runs of
// 1 MiB all-gather and reduce-scatter; perf/README.md, "Under contention"). Oversubscribed cores take 3 ms
// and more from each thread per turn, which 20 ms still sees.
class ContentionGauge {
 public:
  static constexpr uint64_t kSamplePeriodNs = 20'000'000;
  static constexpr double kContendedShare = 0.1;
  static constexpr uint64_t kHoldNs = 200'000'000;

  // Whether a sample is due at `now_ns` (the caller then reads the wait and calls sample).
  bool due(uint64_t now_ns) const { return !sampled_ || now_ns - last_ns_ >= kSamplePeriodNs; }
  void sample(uint64_t now_ns, uint64_t wait_ns);
  bool contended(uint64_t now_ns) const { return contended_ && now_ns < contended_until_ns_; }

 private:
  bool sampled_ = false;
  bool contended_ = false;
  uint64_t last_ns_ = 0;
  uint64_t last_wait_ns_ = 0;
  uint64_t contended_until_ns_ = 0;
};

// The calling thread's gauge, sampled from its schedstat when due. False where the kernel has no
// schedstat (CONFIG_SCHED_INFO off): the waits then spin as on a quiet host. Cheap enough to ask before
// every spin: a clock read, and a read of that small file every kSamplePeriodNs at most.
bool cpuContended();

}  // namespace psdp
