#include "base/cpu_contention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

namespace psdp {
namespace {

constexpr uint64_t kMs = 1'000'000;

TEST(ContentionGauge, QuietUntilTheWaitExceedsItsShare) {
  ContentionGauge gauge;
  EXPECT_TRUE(gauge.due(0));
  gauge.sample(0, 0);
  EXPECT_FALSE(gauge.due(19 * kMs));  // within the sample period
  EXPECT_TRUE(gauge.due(20 * kMs));
  // 5% of 20 ms spent waiting for a core: quiet. So is one preemption of 400 us, a fifth of a 2 ms window.
  gauge.sample(20 * kMs, kMs);
  EXPECT_FALSE(gauge.contended(20 * kMs));
  gauge.sample(40 * kMs, kMs + 400'000);
  EXPECT_FALSE(gauge.contended(40 * kMs));
  // 40% of the next 20 ms: contended, and held for kHoldNs after.
  gauge.sample(60 * kMs, kMs + 400'000 + 8 * kMs);
  EXPECT_TRUE(gauge.contended(60 * kMs));
  // Quiet samples within the hold do not clear it (a thread that blocks waits less for a core).
  gauge.sample(80 * kMs, kMs + 400'000 + 8 * kMs);
  EXPECT_TRUE(gauge.contended(80 * kMs));
  EXPECT_TRUE(gauge.contended(60 * kMs + ContentionGauge::kHoldNs - 1));
  EXPECT_FALSE(gauge.contended(60 * kMs + ContentionGauge::kHoldNs));
}

TEST(ContentionGauge, FirstSampleAndBackwardCountersDecideNothing) {
  ContentionGauge gauge;
  gauge.sample(20 * kMs, 1000 * kMs);  // a large wait before the first sample is history, not contention
  EXPECT_FALSE(gauge.contended(20 * kMs));
  gauge.sample(40 * kMs, 0);  // a counter that went backwards (a reused fd, a new thread) is skipped
  EXPECT_FALSE(gauge.contended(40 * kMs));
  gauge.sample(60 * kMs, 10 * kMs);  // and measured from again
  EXPECT_TRUE(gauge.contended(60 * kMs));
}

// The real gauge of this thread: quiet while this test runs alone, contended once more threads spin than
// there are cores. Skipped, saying why, where the kernel keeps no schedstat.
TEST(CpuContended, SeesThreadsThatOutnumberTheCores) {
  FILE* f = std::fopen("/proc/thread-self/schedstat", "r");
  if (f == nullptr) GTEST_SKIP() << "no /proc/thread-self/schedstat (kernel without CONFIG_SCHED_INFO)";
  std::fclose(f);
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::atomic<bool> stop{false};
  std::vector<std::thread> spinners;
  for (unsigned i = 0; i < 2 * cores; ++i) {
    spinners.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
  }
  // Spin too, asking, for up to 5 s: with 2 threads per core besides this one, this thread waits for a core
  // well over a tenth of the time.
  bool seen = false;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!seen && std::chrono::steady_clock::now() < until) seen = cpuContended();
  stop = true;
  for (std::thread& t : spinners) t.join();
  EXPECT_TRUE(seen);
}

}  // namespace
}  // namespace psdp
