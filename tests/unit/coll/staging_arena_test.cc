#include "coll/staging_arena.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace psdp::coll {
namespace {

StagingSlots mustClaim(StagingArena& arena, uint32_t seq, int slots, size_t bytes) {
  auto claimed = arena.claim(seq, slots, bytes);
  EXPECT_TRUE(claimed.isOk()) << claimed.status().toString();
  EXPECT_TRUE(claimed.isOk() && claimed.value().has_value()) << "seq " << seq << " got no slots";
  return claimed.isOk() && claimed.value() ? *claimed.value() : StagingSlots{};
}

bool waits(StagingArena& arena, uint32_t seq, int slots, size_t bytes) {
  auto claimed = arena.claim(seq, slots, bytes);
  return claimed.isOk() && !claimed.value().has_value();
}

TEST(StagingArenaTest, SlotsAreAlignedZeroedAndDisjoint) {
  auto arena = StagingArena::create(64 << 10, 4);
  ASSERT_TRUE(arena.isOk()) << arena.status().toString();
  StagingSlots s = mustClaim(arena.value(), 0, 8, 1000);
  EXPECT_EQ(s.slots, 8);
  EXPECT_GE(s.slot_bytes, 1000u);
  for (int i = 0; i < s.slots; ++i) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(s.slot(i)) % 64, 0u);
    for (size_t b = 0; b < 1000; ++b) ASSERT_EQ(s.slot(i)[b], std::byte{0});
  }
  // Every byte of every slot is writable without disturbing its neighbours.
  for (int i = 0; i < s.slots; ++i) std::memset(s.slot(i), i + 1, 1000);
  for (int i = 0; i < s.slots; ++i) {
    EXPECT_EQ(s.slot(i)[0], std::byte(i + 1));
    EXPECT_EQ(s.slot(i)[999], std::byte(i + 1));
  }
}

// Operation s claims only after every earlier one has claimed or passed, whatever order they ask in.
TEST(StagingArenaTest, ClaimsGoInSequenceOrder) {
  auto arena = StagingArena::create(64 << 10, 8);
  ASSERT_TRUE(arena.isOk());
  StagingArena& a = arena.value();
  EXPECT_TRUE(waits(a, 1, 1, 64)) << "seq 0 has not claimed yet";
  EXPECT_FALSE(a.pass(2));
  EXPECT_TRUE(a.isTurnOf(0));
  mustClaim(a, 0, 1, 64);
  EXPECT_TRUE(a.pass(1));
  EXPECT_TRUE(a.isTurnOf(2));
  mustClaim(a, 2, 1, 64);
}

// Space returns in claim order: a claim that does not fit waits until the oldest ones are released, and
// claims wrap around the block without overlapping a live one.
TEST(StagingArenaTest, FullArenaWaitsAndWrapsAround) {
  auto arena = StagingArena::create(4096, 8);
  ASSERT_TRUE(arena.isOk());
  StagingArena& a = arena.value();
  const size_t quarter = a.capacity() / 4;
  StagingSlots s0 = mustClaim(a, 0, 1, quarter);
  StagingSlots s1 = mustClaim(a, 1, 1, quarter);
  StagingSlots s2 = mustClaim(a, 2, 2, quarter);
  EXPECT_TRUE(waits(a, 3, 1, quarter)) << "the arena is full";
  a.release(1);  // not the oldest: nothing comes back yet
  EXPECT_TRUE(waits(a, 3, 1, quarter));
  a.release(0);  // the two oldest are free now
  StagingSlots s3 = mustClaim(a, 3, 2, quarter);
  EXPECT_EQ(s3.base, s0.base) << "wrapped to the start";
  EXPECT_LT(s3.slot(1) + quarter, s2.base + 1) << "ends before the live claim of seq 2";
  (void)s1;
  EXPECT_TRUE(waits(a, 4, 1, 64));
  a.release(2);
  a.release(3);
  StagingSlots s4 = mustClaim(a, 4, 4, quarter);
  EXPECT_EQ(s4.base, s0.base) << "an empty arena starts over";
}

TEST(StagingArenaTest, ClaimsBeyondTheArenaOrItsClaimCountAreRefusedOrWait) {
  auto arena = StagingArena::create(4096, 2);
  ASSERT_TRUE(arena.isOk());
  StagingArena& a = arena.value();
  EXPECT_EQ(a.claim(0, 2, a.capacity()).status().code(), PSDP_ERR_INVALID_ARGUMENT);
  mustClaim(a, 0, 1, 64);
  mustClaim(a, 1, 1, 64);
  EXPECT_TRUE(waits(a, 2, 1, 64)) << "two claims alive at most";
  a.release(0);
  mustClaim(a, 2, 1, 64);
}

TEST(StagingArenaTest, RejectsAnEmptyArena) {
  EXPECT_EQ(StagingArena::create(0, 4).status().code(), PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(StagingArena::create(64, 0).status().code(), PSDP_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace psdp::coll
