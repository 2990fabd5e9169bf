#include "coll/ring_schedule.h"

#include <gtest/gtest.h>

#include <map>
#include <tuple>
#include <vector>

namespace psdp::coll {
namespace {

struct Fragment {
  int step;
  int block;
  size_t offset;  // in the whole buffer
  size_t count;
  uint64_t position;

  bool sameData(const Fragment& o) const { return block == o.block && offset == o.offset && count == o.count; }
};

std::vector<Fragment> walk(const BlockLayout& layout, const RingShape& shape, int shift) {
  std::vector<Fragment> out;
  for (RingCursor c(layout, shape, shift); !c.done(); c.advance()) {
    EXPECT_EQ(c.index(), out.size());
    EXPECT_GT(c.count(), 0u);
    EXPECT_LE(c.count(), shape.frag_elems);
    EXPECT_EQ(c.bufferOffset(), layout.offset(c.block()) + c.blockOffset());
    EXPECT_EQ(c.lastStep(), c.step() == shape.nranks - 2);
    if (!out.empty()) {
      EXPECT_GT(c.position(), out.back().position);
    }
    out.push_back({c.step(), c.block(), c.bufferOffset(), c.count(), c.position()});
  }
  return out;
}

struct Case {
  size_t count;
  int nranks;
  size_t frag_elems;
  int frags_per_round;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (int n : {2, 3, 4, 7}) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{5}, size_t{7}, size_t{64}, size_t{1000}, size_t{4099}}) {
      for (size_t frag : {size_t{1}, size_t{3}, size_t{16}, size_t{4096}}) {
        for (int g : {1, 4}) out.push_back({count, n, frag, g});
      }
    }
  }
  return out;
}

TEST(BlockLayoutTest, BlocksAreContiguousAndDifferByAtMostOne) {
  for (int n : {1, 2, 3, 4, 7}) {
    for (size_t count : {0, 1, 6, 7, 8, 1000, 1000003}) {
      BlockLayout layout(count, n);
      size_t next = 0;
      for (int b = 0; b < n; ++b) {
        EXPECT_EQ(layout.offset(b), next);
        EXPECT_LE(layout.maxSize() - layout.size(b), 1u);
        next += layout.size(b);
      }
      EXPECT_EQ(next, count);
      EXPECT_EQ(layout.blocks(), n);
    }
  }
}

TEST(BlockLayoutTest, GranuleAlignedBlocksDifferByAtMostOneGranule) {
  for (size_t granule : {1, 16, 64}) {
    for (int n : {1, 2, 3, 5, 7}) {
      for (size_t count : {0, 1, 15, 16, 17, 100, 1000003, 16777216}) {
        BlockLayout layout(count, n, granule);
        size_t next = 0, smallest = count, largest = 0;
        for (int b = 0; b < n; ++b) {
          EXPECT_EQ(layout.offset(b), next) << count << " in " << n << " blocks of " << granule;
          EXPECT_EQ(layout.offset(b) % granule, 0u);
          EXPECT_LE(layout.size(b), layout.maxSize());
          smallest = std::min(smallest, layout.size(b));
          largest = std::max(largest, layout.size(b));
          next += layout.size(b);
        }
        EXPECT_EQ(next, count);
        EXPECT_EQ(largest, layout.maxSize());
        EXPECT_LE(largest - smallest, granule) << count << " in " << n << " blocks of " << granule;
      }
    }
  }
}

TEST(BlockLayoutTest, UniformBlocksWhenTheCountDivides) {
  BlockLayout layout(12, 4);
  for (int b = 0; b < 4; ++b) {
    EXPECT_EQ(layout.size(b), 3u);
    EXPECT_EQ(layout.offset(b), 3u * static_cast<size_t>(b));
  }
}

// The contract both ends of a link rely on: rank r sending with shift k visits exactly what rank r+1
// receiving with shift k+1 visits, in the same order.
// The layouts the ring tests walk for a case: the even one, and given ones (BlockLayout::fromOffsets): counts
// that grow by rank with every other block empty, as the -v collectives pass, and the reduce's, whose only
// block is the root's, for every root. The layouts point into `offsets`, whose inner arrays never move.
struct Layouts {
  std::vector<std::vector<size_t>> offsets;
  std::vector<BlockLayout> layouts;
};

Layouts layoutsFor(const Case& c) {
  Layouts out;
  out.layouts.emplace_back(c.count, c.nranks);
  const auto n = static_cast<size_t>(c.nranks);
  std::vector<size_t> uneven(n + 1, 0);
  for (size_t r = 0; r < n; ++r) uneven[r + 1] = uneven[r] + (r % 2 == 1 ? 0 : c.count / n * (r + 1) + r);
  out.offsets.push_back(uneven);
  for (int root = 0; root < c.nranks; ++root) {
    std::vector<size_t> single(n + 1);
    for (int b = 0; b <= c.nranks; ++b) single[static_cast<size_t>(b)] = b <= root ? 0 : c.count;
    out.offsets.push_back(single);
  }
  for (const std::vector<size_t>& offsets : out.offsets) {
    out.layouts.push_back(BlockLayout::fromOffsets(offsets.data(), c.nranks));
  }
  return out;
}

TEST(BlockLayoutTest, GivenOffsetsAreTheBlocks) {
  const size_t offsets[] = {0, 0, 5, 5, 12};
  BlockLayout layout = BlockLayout::fromOffsets(offsets, 4);
  EXPECT_EQ(layout.count(), 12u);
  EXPECT_EQ(layout.blocks(), 4);
  EXPECT_EQ(layout.size(0), 0u);
  EXPECT_EQ(layout.offset(1), 0u);
  EXPECT_EQ(layout.size(1), 5u);
  EXPECT_EQ(layout.size(2), 0u);
  EXPECT_EQ(layout.offset(3), 5u);
  EXPECT_EQ(layout.size(3), 7u);
  EXPECT_EQ(layout.maxSize(), 7u);
}

TEST(RingCursorTest, SenderAndReceiverWalkTheSameFragments) {
  for (const Case& c : cases()) {
    Layouts all = layoutsFor(c);
    for (const BlockLayout& layout : all.layouts) {
      for (int shift : {0, 1}) {
        for (int r = 0; r < c.nranks; ++r) {
          int right = (r + 1) % c.nranks;
          auto sent = walk(layout, {r, c.nranks, c.frag_elems, c.frags_per_round}, shift);
          auto received = walk(layout, {right, c.nranks, c.frag_elems, c.frags_per_round}, shift + 1);
          ASSERT_EQ(sent.size(), received.size()) << "count " << c.count << " n " << c.nranks;
          for (size_t i = 0; i < sent.size(); ++i) {
            EXPECT_TRUE(sent[i].sameData(received[i]));
            EXPECT_EQ(sent[i].step, received[i].step);
          }
        }
      }
    }
  }
}

// Each step covers its whole block exactly once; a pass of nranks-1 steps covers every block but one.
TEST(RingCursorTest, EachStepCoversItsBlockExactlyOnce) {
  for (const Case& c : cases()) {
    Layouts all = layoutsFor(c);
    for (const BlockLayout& layout : all.layouts) {
      for (int r = 0; r < c.nranks; ++r) {
        std::map<int, size_t> covered;  // step -> elements
        std::map<int, int> block_of_step;
        for (const Fragment& f : walk(layout, {r, c.nranks, c.frag_elems, c.frags_per_round}, 1)) {
          covered[f.step] += f.count;
          auto [it, inserted] = block_of_step.emplace(f.step, f.block);
          EXPECT_EQ(it->second, f.block);
          EXPECT_EQ(f.block, ((r - f.step - 1) % c.nranks + c.nranks) % c.nranks);
        }
        for (auto [step, elements] : covered) EXPECT_EQ(elements, layout.size(block_of_step[step]));
        for (int s = 0; s < c.nranks - 1; ++s) {
          int block = ((r - s - 1) % c.nranks + c.nranks) % c.nranks;
          if (layout.size(block) > 0) {
            EXPECT_EQ(covered.count(s), 1u) << "step " << s;
          }
        }
      }
    }
  }
}

// Reduce-scatter forwards at step s+1 what it received at step s, frags_per_round positions later: every
// received fragment but the last step's has its forward there, and every send after step 0 has its source.
TEST(RingCursorTest, ForwardsAreOneRoundWidthBehind) {
  for (const Case& c : cases()) {
    Layouts all = layoutsFor(c);
    for (const BlockLayout& layout : all.layouts) {
      for (int r = 0; r < c.nranks; ++r) {
        RingShape shape{r, c.nranks, c.frag_elems, c.frags_per_round};
        std::map<uint64_t, Fragment> sends;
        for (const Fragment& f : walk(layout, shape, 1)) sends.emplace(f.position, f);
        size_t forwards = 0;
        for (const Fragment& f : walk(layout, shape, 2)) {
          if (f.step == c.nranks - 2) {
            EXPECT_EQ(f.block, r);
            continue;
          }
          auto it = sends.find(f.position + static_cast<uint64_t>(c.frags_per_round));
          ASSERT_NE(it, sends.end());
          EXPECT_TRUE(it->second.sameData(f));
          EXPECT_EQ(it->second.step, f.step + 1);
          ++forwards;
        }
        size_t later_sends = 0;
        for (const auto& [position, f] : sends) later_sends += f.step > 0 ? 1 : 0;
        EXPECT_EQ(forwards, later_sends);
      }
    }
  }
}

TEST(RingCursorTest, OneRankOrNoDataMeansNoFragments) {
  EXPECT_TRUE(RingCursor(BlockLayout(100, 1), RingShape{0, 1, 8, 4}, 1).done());
  EXPECT_TRUE(RingCursor(BlockLayout(0, 4), RingShape{2, 4, 8, 4}, 1).done());
}

TEST(RingCursorTest, FragmentsAreRoundMajor) {
  // 2 ranks, blocks of 10, fragments of 2, 2 per round: rounds cover [0,4), [4,8), [8,10).
  auto frags = walk(BlockLayout(20, 2), RingShape{0, 2, 2, 2}, 1);
  std::vector<std::tuple<int, size_t, size_t>> got;
  for (const Fragment& f : frags) got.emplace_back(f.block, f.offset, f.count);
  std::vector<std::tuple<int, size_t, size_t>> want = {{1, 10, 2}, {1, 12, 2}, {1, 14, 2}, {1, 16, 2}, {1, 18, 2}};
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace psdp::coll
