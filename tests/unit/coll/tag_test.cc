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
  transport::Tag every_header = makeHeaderTag(0xffffffffu, 0xffffffffu, kMaxAgreementRounds - 1);
  EXPECT_EQ(every_header, kTopBit - 1);
}

// No data tag equals an agreement round's, in any context, and the rounds of two operations differ.
TEST(TagTest, TheAgreementOfEveryOperationIsApartFromAllData) {
  for (uint32_t context : {0u, 1u, 0xffffu}) {
    for (uint32_t op : {0u, 1u, static_cast<uint32_t>(kTagSeqMask)}) {
      for (int round : {0, 1, kMaxAgreementRounds - 1}) {
        transport::Tag header = makeHeaderTag(context, op, round);
        EXPECT_EQ(header & kTagHeaderBit, kTagHeaderBit);
        for (uint32_t seq : {0u, 1u, static_cast<uint32_t>(kTagSeqMask), ~0u}) {
          EXPECT_NE(makeTag(context, seq), header);
        }
      }
    }
  }
  EXPECT_NE(makeHeaderTag(1, 0, 0), makeHeaderTag(2, 0, 0));
  EXPECT_NE(makeHeaderTag(1, 0, 0), makeHeaderTag(1, 0, 1));
  EXPECT_NE(makeHeaderTag(1, 3, 2), makeHeaderTag(1, 4, 2));
}

TEST(TagTest, SequenceWrapsWithoutTouchingTheContext) {
  EXPECT_EQ(makeTag(7, static_cast<uint32_t>(kTagSeqMask) + 1), makeTag(7, 0));
  EXPECT_NE(makeTag(7, 1), makeTag(8, 1));
  EXPECT_NE(makeTag(7, 1), makeTag(7, 2));
  // Only the low 16 bits of the context id are kept.
  EXPECT_EQ(makeTag(0x10007, 3), makeTag(7, 3));
  EXPECT_EQ(makeHeaderTag(7, static_cast<uint32_t>(kTagSeqMask) + 2, 1), makeHeaderTag(7, 1, 1));
}

}  // namespace
}  // namespace psdp::coll
