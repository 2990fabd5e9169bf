#include "coll/tag.h"

#include <gtest/gtest.h>

namespace psdp::coll {
namespace {

TEST(TagTest, FieldsStayInTheirBitsAndTheTopBitIsNeverSet) {
  constexpr transport::Tag kTopBit = transport::kReservedTagBit;
  EXPECT_EQ(makeTag(0, 0), 0u);
  EXPECT_EQ(makeTag(0, 5), 5u);
  EXPECT_EQ(makeTag(1, 0), transport::Tag{1} << kTagContextShift);
  transport::Tag all = makeTag(0xffffffffu, 0xffffffffu);
  EXPECT_EQ(all & ~transport::kTagMask, 0u);
  EXPECT_EQ(all & kTopBit, 0u);
  EXPECT_EQ(all | kTagHeaderBit, kTopBit - 1);
}

// No sequence number gives a data tag equal to an agreement round's, in any context.
TEST(TagTest, TheAgreementChannelIsApartFromEveryOperation) {
  for (uint32_t context : {0u, 1u, 0xffffu}) {
    for (int round : {0, 1, 31}) {
      transport::Tag header = makeHeaderTag(context, round);
      EXPECT_EQ(header & kTagHeaderBit, kTagHeaderBit);
      EXPECT_EQ(header & ~kTagHeaderBit, makeTag(context, static_cast<uint32_t>(round)));
      for (uint32_t seq : {0u, 1u, static_cast<uint32_t>(kTagSeqMask), ~0u}) EXPECT_NE(makeTag(context, seq), header);
    }
  }
  EXPECT_NE(makeHeaderTag(1, 0), makeHeaderTag(2, 0));
  EXPECT_NE(makeHeaderTag(1, 0), makeHeaderTag(1, 1));
}

TEST(TagTest, SequenceWrapsWithoutTouchingTheContext) {
  EXPECT_EQ(makeTag(7, static_cast<uint32_t>(kTagSeqMask) + 1), makeTag(7, 0));
  EXPECT_NE(makeTag(7, 1), makeTag(8, 1));
  EXPECT_NE(makeTag(7, 1), makeTag(7, 2));
  // Only the low 16 bits of the context id are kept.
  EXPECT_EQ(makeTag(0x10007, 3), makeTag(7, 3));
}

}  // namespace
}  // namespace psdp::coll
