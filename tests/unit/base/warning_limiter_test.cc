// WarningLimiter: a burst per kind per window, the rest counted and reported with the next admitted one
// of the kind or by pending(); kinds never limit one another.
#include "base/warning_limiter.h"

#include <gtest/gtest.h>

namespace psdp {
namespace {

constexpr uint64_t kSecond = 1000000000;

TEST(WarningLimiterTest, BurstPerKindThenCountedUntilTheNextWindow) {
  WarningLimiter limiter(3, 10.0);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(limiter.offer("garbage", kSecond + i).admit);
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(limiter.offer("garbage", 2 * kSecond).admit);
  // Another kind is not silenced by the flood.
  const WarningLimiter::Verdict other = limiter.offer("wrong secret", 2 * kSecond);
  EXPECT_TRUE(other.admit);
  EXPECT_EQ(other.held_back, 0u);
  ASSERT_EQ(limiter.pending().size(), 1u);
  EXPECT_EQ(limiter.pending()[0], (std::pair<std::string, uint64_t>("garbage", 5)));
  // The next window admits again, and says how many were held back.
  const WarningLimiter::Verdict next = limiter.offer("garbage", 11 * kSecond + 1);
  EXPECT_TRUE(next.admit);
  EXPECT_EQ(next.held_back, 5u);
  EXPECT_TRUE(limiter.pending().empty());
}

}  // namespace
}  // namespace psdp
