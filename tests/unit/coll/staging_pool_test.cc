#include "coll/staging_pool.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

namespace psdp::coll {
namespace {

TEST(StagingPoolTest, SlotsAreAlignedZeroedAndDisjoint) {
  auto pool = StagingPool::create(1000, 8);
  ASSERT_TRUE(pool.isOk()) << pool.status().toString();
  StagingPool& p = pool.value();
  EXPECT_EQ(p.slots(), 8);
  EXPECT_EQ(p.slotBytes(), 1000u);
  for (int i = 0; i < p.slots(); ++i) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p.slot(i)) % 64, 0u);
    for (size_t b = 0; b < p.slotBytes(); ++b) ASSERT_EQ(p.slot(i)[b], std::byte{0});
    if (i > 0) {
      EXPECT_GE(p.slot(i) - p.slot(i - 1), 1000);
    }
  }
  // Every byte of every slot is writable without disturbing its neighbours.
  for (int i = 0; i < p.slots(); ++i) std::memset(p.slot(i), i + 1, p.slotBytes());
  for (int i = 0; i < p.slots(); ++i) {
    EXPECT_EQ(p.slot(i)[0], std::byte(i + 1));
    EXPECT_EQ(p.slot(i)[p.slotBytes() - 1], std::byte(i + 1));
  }
}

TEST(StagingPoolTest, RejectsAnEmptyPool) {
  EXPECT_EQ(StagingPool::create(0, 4).status().code(), PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(StagingPool::create(64, 0).status().code(), PSDP_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace psdp::coll
