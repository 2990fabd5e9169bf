#include "transport/ucx/ucx_event_counter.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace psdp::transport::ucx {
namespace {

using Clock = std::chrono::steady_clock;

TEST(EventCounterTest, ReturnsAtOnceWhenTheCountAlreadyMoved) {
  EventCounter counter;
  uint32_t seen = counter.value();
  counter.bump();
  counter.publish();
  EXPECT_TRUE(counter.wait(seen, Deadline::after(10)).isOk());
}

TEST(EventCounterTest, TimesOutAtTheDeadline) {
  EventCounter counter;
  auto start = Clock::now();
  Status status = counter.wait(counter.value(), Deadline::after(0.05));
  auto elapsed = Clock::now() - start;
  EXPECT_EQ(status.code(), PSDP_ERR_TIMEOUT) << status.toString();
  EXPECT_GE(elapsed, std::chrono::milliseconds(50));
  EXPECT_LT(elapsed, std::chrono::seconds(2));
}

TEST(EventCounterTest, ExpiredDeadlineTimesOutWithoutSleeping) {
  EventCounter counter;
  EXPECT_EQ(counter.wait(counter.value(), Deadline::after(0)).code(), PSDP_ERR_TIMEOUT);
}

// Two threads hand a token back and forth through two counters. Each round one side is likely asleep in
// the futex when the other publishes; a lost wake-up would surface as a timeout.
TEST(EventCounterTest, PingPongLosesNoWakeups) {
  constexpr int kRounds = 2000;
  EventCounter ping, pong;
  std::thread partner([&] {
    for (int i = 0; i < kRounds; ++i) {
      ASSERT_TRUE(ping.wait(static_cast<uint32_t>(i), Deadline::after(10)).isOk()) << "round " << i;
      pong.bump();
      pong.publish();
    }
  });
  for (int i = 0; i < kRounds; ++i) {
    ping.bump();
    ping.publish();
    ASSERT_TRUE(pong.wait(static_cast<uint32_t>(i), Deadline::after(10)).isOk()) << "round " << i;
  }
  partner.join();
  EXPECT_EQ(ping.value(), static_cast<uint32_t>(kRounds));
  EXPECT_EQ(pong.value(), static_cast<uint32_t>(kRounds));
}

}  // namespace
}  // namespace psdp::transport::ucx
