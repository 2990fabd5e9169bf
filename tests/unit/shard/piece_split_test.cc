#include "shard/piece_split.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace psdp::shard {
namespace {

// Every small case: pieces tile the chunk in order, start on unit boundaries, nest, differ by at most one
// unit, and memberAt/replicaAt find the piece that holds each element.
TEST(PieceSplitTest, ExhaustiveSmallCases) {
  for (uint64_t unit : {1, 2, 3, 8}) {
    for (uint64_t g = 1; g <= 6; ++g) {
      for (uint64_t r = 1; r <= 5; ++r) {
        for (uint64_t n = 1; n <= 3 * g * r * unit + 7; ++n) {
          SCOPED_TRACE(testing::Message() << "n=" << n << " unit=" << unit << " G=" << g << " R=" << r);
          const PieceSplit split(n, unit, g, r);
          uint64_t at = 0, glo = n, ghi = 0, wlo = n, whi = 0;
          for (uint64_t m = 0; m < g; ++m) {
            const Extent gp = split.groupPiece(m);
            ASSERT_EQ(gp.begin, at);
            ASSERT_TRUE(gp.count == 0 || gp.begin % unit == 0);
            glo = std::min(glo, gp.count);
            ghi = std::max(ghi, gp.count);
            for (uint64_t k = 0; k < r; ++k) {
              const Extent wp = split.worldPiece(m, k);
              ASSERT_EQ(wp.begin, at);
              ASSERT_TRUE(wp.count == 0 || wp.begin % unit == 0);
              wlo = std::min(wlo, wp.count);
              whi = std::max(whi, wp.count);
              for (uint64_t x = wp.begin; x < wp.begin + wp.count; ++x) {
                ASSERT_EQ(split.memberAt(x), m);
                ASSERT_EQ(split.replicaAt(m, x), k);
              }
              at += wp.count;
            }
            ASSERT_EQ(at, gp.begin + gp.count);
            ASSERT_LE(gp.count, split.maxGroupUnits() * unit);
          }
          ASSERT_EQ(at, n);
          ASSERT_LE(ghi - glo, unit);
          ASSERT_LE(whi - wlo, unit);
          ASSERT_LE(whi, split.maxWorldUnits() * unit);
        }
      }
    }
  }
}

TEST(PieceSplitTest, LargerPartsComeLast) {
  // 10 units over 4 parts: 2, 2, 3, 3.
  EXPECT_EQ(unitsBefore(10, 4, 1), 2u);
  EXPECT_EQ(unitsBefore(10, 4, 2), 4u);
  EXPECT_EQ(unitsBefore(10, 4, 3), 7u);
  EXPECT_EQ(unitsBefore(10, 4, 4), 10u);
  // The partial last unit goes with a largest piece: 9 elements in units of 4 over 2 parts: 4 + 5.
  const PieceSplit split(9, 4, 2, 1);
  EXPECT_EQ(split.groupPiece(0).count, 4u);
  EXPECT_EQ(split.groupPiece(1).count, 5u);
}

}  // namespace
}  // namespace psdp::shard
