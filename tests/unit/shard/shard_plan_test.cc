#include "shard/shard_plan.h"

#include <gtest/gtest.h>

#include <random>

#include "plan_checks.h"
#include "plan_fixtures.h"

namespace psdp::shard {
namespace {

using testing::config;
using testing::describe;
using testing::mustBuild;
using testing::planInvariantsHold;

BufferDesc param(const char* name, uint64_t count, psdp_dtype_t dtype = PSDP_FLOAT32,
                 MemoryKind memory = MemoryKind::kHost) {
  return BufferDesc{name, count, dtype, Role::kParameter, memory, 0};
}

TEST(ShardPlanTest, BufferStraddlesChunkAndPieceBoundaries) {
  // float32, 16-byte alignment: u = 4 elements; 1 KiB chunks: 256 elements, 64 per rank.
  const ShardPlan plan = mustBuild({param("w0", 1000), param("w1", 24)}, config(4, 4, ShardLevel::kGroup, 1024, 16));
  ASSERT_EQ(plan.chunks().size(), 4u);
  EXPECT_EQ(plan.chunks()[3].begin, 768u);
  EXPECT_EQ(plan.ownedRanges(3, 3), (std::vector<OwnedRange>{{0, 960, 40}, {1, 0, 24}}));
  EXPECT_EQ(plan.ownedRanges(1, 0), (std::vector<OwnedRange>{{0, 64, 64}}));
  EXPECT_EQ(plan.ownedCount(2), 4 * 64u);
  auto pos = plan.findChunk(1, 5);
  ASSERT_TRUE(pos.isOk());
  EXPECT_EQ(pos.value().chunk, 3u);
  EXPECT_EQ(pos.value().offset, 1000 - 768 + 5u);
  EXPECT_TRUE(planInvariantsHold(plan));
}

TEST(ShardPlanTest, LastChunkSplitsInAlignedUnitsLargestLast) {
  // 37 float32 elements, u = 4: 10 units over 4 ranks = 2, 2, 3, 3 units; the last holds the partial unit.
  const ShardPlan plan = mustBuild({param("w", 37)}, config(4, 4, ShardLevel::kGroup, 1 << 20, 16));
  ASSERT_EQ(plan.chunks().size(), 1u);
  EXPECT_EQ(plan.ownedCount(0, 0), 8u);
  EXPECT_EQ(plan.ownedCount(1, 0), 8u);
  EXPECT_EQ(plan.ownedCount(2, 0), 12u);
  EXPECT_EQ(plan.ownedCount(3, 0), 9u);
  EXPECT_EQ(plan.chunks()[0].padded_group_piece, 12u);
}

TEST(ShardPlanTest, WorldPiecesNestInGroupPieces) {
  // W = 4, G = 2: rank r is replica r / 2, member r % 2. 256 elements: group pieces of 128, world pieces of 64.
  const ShardPlan plan = mustBuild({param("w", 256)}, config(4, 2, ShardLevel::kWorld, 1024, 16));
  EXPECT_EQ(plan.ownedPiece(0, 0).begin, 0u);
  EXPECT_EQ(plan.ownedPiece(2, 0).begin, 64u);
  EXPECT_EQ(plan.ownedPiece(1, 0).begin, 128u);
  EXPECT_EQ(plan.ownedPiece(3, 0).begin, 192u);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(plan.ownedCount(r), 64u);
  EXPECT_EQ(plan.chunks()[0].padded_group_piece, 128u);
  EXPECT_EQ(plan.chunks()[0].padded_world_piece, 64u);
  // The same at level group: each replica pair holds the same 128.
  const ShardPlan group = mustBuild({param("w", 256)}, config(4, 2, ShardLevel::kGroup, 1024, 16));
  EXPECT_EQ(group.ownedRanges(0), group.ownedRanges(2));
  EXPECT_EQ(group.ownedCount(1), 128u);
}

TEST(ShardPlanTest, RankLayoutPermutesOwners) {
  PlanConfig c = config(4, 2, ShardLevel::kGroup, 1024, 16);
  c.rank_layout = {3, 1, 0, 2};  // shard groups {3, 1} and {0, 2}
  const ShardPlan plan = mustBuild({param("w", 256)}, c);
  EXPECT_EQ(plan.ownedPiece(3, 0).begin, 0u);
  EXPECT_EQ(plan.ownedPiece(0, 0).begin, 0u);
  EXPECT_EQ(plan.ownedPiece(1, 0).begin, 128u);
  EXPECT_EQ(plan.ownedPiece(2, 0).begin, 128u);
  EXPECT_TRUE(planInvariantsHold(plan));
}

TEST(ShardPlanTest, OneSpacePerDtypeAndMemoryKindChunksInRegistrationOrder) {
  // 64-byte chunks: 16 float32 or 32 bfloat16 elements.
  const std::vector<BufferDesc> buffers = {param("a", 40, PSDP_BFLOAT16), param("b", 20), param("c", 10, PSDP_BFLOAT16),
                                           param("d", 8, PSDP_BFLOAT16, MemoryKind::kCuda)};
  const ShardPlan plan = mustBuild(buffers, config(2, 2, ShardLevel::kGroup, 64, 4));
  ASSERT_EQ(plan.spaces().size(), 3u);
  EXPECT_EQ(plan.spaces()[0].size(), 50u);
  // a[0..32), a[32..40)+c[0..24)... by first element: a@0, a@32, b@0, b@16, d@0.
  std::vector<std::pair<int, uint64_t>> firsts;
  for (const Chunk& chunk : plan.chunks()) {
    const Space& space = plan.spaces()[chunk.space];
    auto it = std::upper_bound(space.starts.begin(), space.starts.end(), chunk.begin) - 1;
    firsts.emplace_back(space.buffers[it - space.starts.begin()], chunk.begin - *it);
  }
  EXPECT_EQ(firsts, (std::vector<std::pair<int, uint64_t>>{{0, 0}, {0, 32}, {1, 0}, {1, 16}, {3, 0}}));
  EXPECT_TRUE(planInvariantsHold(plan));
}

TEST(ShardPlanTest, GradientsOfAnotherDtypeShareTheLayoutAndWidenTheUnit) {
  // bfloat16 parameters with float32 gradients: u = 256 / 2 = 128 elements, chunks of 1 KiB / 4 = 256.
  std::vector<BufferDesc> buffers = {param("w", 1000, PSDP_BFLOAT16),
                                     {"w.grad", 1000, PSDP_FLOAT32, Role::kGradient, MemoryKind::kHost, 0}};
  const ShardPlan plan = mustBuild(buffers, config(2, 2, ShardLevel::kGroup, 1024, 256));
  EXPECT_EQ(plan.spaces()[0].unit, 128u);
  EXPECT_EQ(plan.spaces()[0].chunk_count, 256u);
  EXPECT_EQ(plan.parameterOf(1), 0);
  auto pos = plan.findChunk(1, 999);
  ASSERT_TRUE(pos.isOk());
  EXPECT_EQ(pos.value().chunk, 3u);
  EXPECT_TRUE(planInvariantsHold(plan));
}

TEST(ShardPlanTest, TinyChunkSizeGrowsToOneUnitPerRank) {
  const ShardPlan plan = mustBuild({param("w", 1000)}, config(8, 4, ShardLevel::kWorld, 1, 16));
  EXPECT_EQ(plan.spaces()[0].chunk_count, 8 * 4u);
  EXPECT_TRUE(planInvariantsHold(plan));
}

TEST(ShardPlanTest, PaddingRoundsTheCollectivePiece) {
  PlanConfig c = config(4, 4, ShardLevel::kGroup, 1 << 20, 16);
  c.pad_bytes = 256;  // 64 float32 elements
  const ShardPlan plan = mustBuild({param("w", 37)}, c);
  EXPECT_EQ(plan.chunks()[0].padded_group_piece, 64u);
}

TEST(ShardPlanTest, OptimizerStateHoldsWhatTheRankOwns) {
  std::vector<BufferDesc> buffers = {
      param("w0", 1000), param("w1", 24), {"exp_avg", 256, PSDP_FLOAT32, Role::kOptimizerState, MemoryKind::kHost, 0}};
  const ShardPlan plan = mustBuild(buffers, config(4, 4, ShardLevel::kGroup, 1024, 16));
  EXPECT_TRUE(plan.checkShardSizedBuffers(1).isOk());
  buffers[2].count = 255;
  Status wrong = mustBuild(buffers, config(4, 4, ShardLevel::kGroup, 1024, 16)).checkShardSizedBuffers(1);
  EXPECT_EQ(wrong.code(), PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_NE(wrong.message().find("buffers[2] 'exp_avg': optimizer state of 255 elements, but rank 1 owns 256"),
            std::string::npos)
      << wrong.message();
  // One aligned unit over four ranks: three own nothing, and their optimizer state is empty.
  buffers = {param("w", 4), {"exp_avg", 0, PSDP_FLOAT32, Role::kOptimizerState, MemoryKind::kHost, 0}};
  const ShardPlan tiny = mustBuild(buffers, config(4, 4, ShardLevel::kGroup, 1024, 16));
  EXPECT_EQ(tiny.ownedCount(3), 4u);
  EXPECT_TRUE(tiny.checkShardSizedBuffers(0).isOk());
  EXPECT_FALSE(tiny.checkShardSizedBuffers(3).isOk());
  EXPECT_TRUE(planInvariantsHold(tiny));
}

TEST(ShardPlanTest, HashIsStableAndCoversEveryInput) {
  std::vector<BufferDesc> buffers = {param("w0", 1000, PSDP_BFLOAT16), param("w1", 24)};
  const PlanConfig base = config(8, 4, ShardLevel::kGroup, 4096, 256);
  const uint64_t h = mustBuild(buffers, base).hash();
  EXPECT_EQ(mustBuild(buffers, base).hash(), h);
  // A golden value: the digest is part of shard files, so a change of its serialization must be deliberate.
  EXPECT_EQ(h, 0x520d9d32bdd207dull) << std::hex << h;
  auto differs = [&](std::vector<BufferDesc> b, PlanConfig c) { EXPECT_NE(mustBuild(b, c).hash(), h); };
  auto with = [&](auto change) {
    PlanConfig c = base;
    change(c);
    return c;
  };
  differs(buffers, with([](PlanConfig& c) { c.world_size = 16; }));
  differs(buffers, with([](PlanConfig& c) { c.group_size = 8; }));
  differs(buffers, with([](PlanConfig& c) { c.level = ShardLevel::kWorld; }));
  differs(buffers, with([](PlanConfig& c) { c.chunk_bytes = 8192; }));
  differs(buffers, with([](PlanConfig& c) { c.align_bytes = 512; }));
  differs(buffers, with([](PlanConfig& c) { c.pad_bytes = 512; }));
  differs(buffers, with([](PlanConfig& c) { c.rank_layout = {1, 0, 2, 3, 4, 5, 6, 7}; }));
  for (int field = 0; field < 4; ++field) {
    std::vector<BufferDesc> b = buffers;
    if (field == 0) b[1].name = "w2";
    if (field == 1) b[1].count = 25;
    if (field == 2) b[1].dtype = PSDP_INT32;
    if (field == 3) b[1].memory = MemoryKind::kCuda;
    differs(b, base);
  }
  // Not part of it: the device index (differs per rank) and optimizer-state buffers (sized by the plan).
  buffers[1].device = 5;
  buffers.push_back(BufferDesc{"exp_avg", 7, PSDP_FLOAT32, Role::kOptimizerState, MemoryKind::kHost, 0});
  EXPECT_EQ(mustBuild(buffers, base).hash(), h);
}

// The property test: random buffer lists and configurations, each checked against every promise.
TEST(ShardPlanTest, RandomPlansKeepEveryPromise) {
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    std::mt19937_64 rng(seed);
    const std::vector<BufferDesc> buffers = testing::randomBuffers(rng, 24);
    const PlanConfig c = testing::randomConfig(rng, buffers);
    SCOPED_TRACE(::testing::Message() << "seed " << seed << ": " << buffers.size() << " buffers, " << describe(c));
    auto plan = ShardPlan::build(buffers, c);
    ASSERT_TRUE(plan.isOk()) << plan.status().toString();
    ASSERT_TRUE(planInvariantsHold(plan.value()));
    // The same inputs give the same plan.
    auto again = ShardPlan::build(buffers, c);
    ASSERT_TRUE(again.isOk());
    ASSERT_EQ(again.value().hash(), plan.value().hash());
    ASSERT_EQ(again.value().chunks().size(), plan.value().chunks().size());
    const int r = static_cast<int>(seed % c.world_size);
    ASSERT_EQ(again.value().ownedRanges(r), plan.value().ownedRanges(r));
  }
}

}  // namespace
}  // namespace psdp::shard
