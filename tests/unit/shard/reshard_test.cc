#include "shard/reshard.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "plan_checks.h"
#include "plan_fixtures.h"

namespace psdp::shard {
namespace {

using testing::config;
using testing::describe;
using testing::mustBuild;
using testing::reshardMovesValid;

std::vector<BufferDesc> params(std::initializer_list<uint64_t> counts) {
  std::vector<BufferDesc> out;
  for (uint64_t n : counts) {
    out.push_back(
        BufferDesc{"p" + std::to_string(out.size()), n, PSDP_FLOAT32, Role::kParameter, MemoryKind::kHost, 0});
  }
  return out;
}

TEST(ReshardTest, SamePlanKeepsEveryFileInPlace) {
  for (ShardLevel level : {ShardLevel::kGroup, ShardLevel::kWorld}) {
    const ShardPlan plan = mustBuild(params({1000, 24, 333}), config(6, 3, level));
    auto moves = reshardMoves(plan, plan);
    ASSERT_TRUE(moves.isOk()) << moves.status().toString();
    ASSERT_EQ(moves.value().size(), 6u);  // one merged move per rank, also with replicas holding the same data
    for (const ReshardMove& m : moves.value()) {
      EXPECT_EQ(m.from_rank, m.to_rank);
      EXPECT_EQ(m.from_offset, 0u);
      EXPECT_EQ(m.count, plan.ownedCount(m.to_rank));
    }
  }
}

TEST(ReshardTest, GrowTheWorldFromGroupToWorldLevel) {
  const std::vector<BufferDesc> buffers = params({1000, 24, 333});
  const ShardPlan from = mustBuild(buffers, config(2, 2, ShardLevel::kGroup));
  const ShardPlan to = mustBuild(buffers, config(8, 4, ShardLevel::kWorld, 4096, 64));
  auto moves = reshardMoves(from, to);
  ASSERT_TRUE(moves.isOk());
  EXPECT_TRUE(reshardMovesValid(from, to, moves.value()));
  // And back again.
  auto back = reshardMoves(to, from);
  ASSERT_TRUE(back.isOk());
  EXPECT_TRUE(reshardMovesValid(to, from, back.value()));
}

TEST(ReshardTest, ReplicasShareTheReading) {
  // Level group with 4 replicas: the new ranks read from several replica groups, not all from one pair.
  const std::vector<BufferDesc> buffers = params({4096});
  const ShardPlan from = mustBuild(buffers, config(8, 2, ShardLevel::kGroup));
  const ShardPlan to = mustBuild(buffers, config(8, 8, ShardLevel::kGroup));
  auto moves = reshardMoves(from, to);
  ASSERT_TRUE(moves.isOk());
  ASSERT_TRUE(reshardMovesValid(from, to, moves.value()));
  std::vector<int> sources;
  for (const ReshardMove& m : moves.value()) sources.push_back(m.from_rank);
  std::sort(sources.begin(), sources.end());
  EXPECT_GE(std::unique(sources.begin(), sources.end()) - sources.begin(), 4);
}

TEST(ReshardTest, ParametersAreMatchedByName) {
  std::vector<BufferDesc> buffers = params({1000, 24, 333, 5});
  const ShardPlan from = mustBuild(buffers, config(4, 4, ShardLevel::kGroup));
  std::reverse(buffers.begin(), buffers.end());
  buffers[0].dtype = PSDP_BFLOAT16;  // the optimizer state does not care about the parameters' dtype
  const ShardPlan to = mustBuild(buffers, config(3, 1, ShardLevel::kWorld));
  auto moves = reshardMoves(from, to);
  ASSERT_TRUE(moves.isOk());
  EXPECT_TRUE(reshardMovesValid(from, to, moves.value()));
}

TEST(ReshardTest, DifferentParametersAreRejected) {
  const ShardPlan from = mustBuild(params({1000, 24}), config(4, 4, ShardLevel::kGroup));
  auto missing = reshardMoves(from, mustBuild(params({1000}), config(4, 4, ShardLevel::kGroup)));
  EXPECT_EQ(missing.status().code(), PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_NE(missing.status().message().find("2 parameters"), std::string::npos) << missing.status().message();
  auto extra = reshardMoves(from, mustBuild(params({1000, 24, 3}), config(4, 4, ShardLevel::kGroup)));
  EXPECT_NE(extra.status().message().find("'p2' is not in the old plan"), std::string::npos);
  auto resized = reshardMoves(from, mustBuild(params({1000, 25}), config(4, 4, ShardLevel::kGroup)));
  EXPECT_NE(resized.status().message().find("'p1' has 25 elements, 24 in the old plan"), std::string::npos);
}

TEST(ReshardTest, RandomPlanPairs) {
  for (uint64_t seed = 1; seed <= 150; ++seed) {
    std::mt19937_64 rng(seed * 7919);
    const std::vector<BufferDesc> buffers = testing::randomBuffers(rng, 16);
    const PlanConfig a = testing::randomConfig(rng, buffers);
    const PlanConfig b = testing::randomConfig(rng, buffers);
    SCOPED_TRACE(::testing::Message() << "seed " << seed << ": from " << describe(a) << " to " << describe(b));
    const ShardPlan from = mustBuild(buffers, a);
    const ShardPlan to = mustBuild(buffers, b);
    auto moves = reshardMoves(from, to);
    ASSERT_TRUE(moves.isOk()) << moves.status().toString();
    ASSERT_TRUE(reshardMovesValid(from, to, moves.value()));
  }
}

}  // namespace
}  // namespace psdp::shard
