// The Qwen2.5 parameter shapes (shared/models/qwen2.5.json, regenerated from each model's config) as
// fixtures: real tensor mixes, from 896-element norms to 1.2-billion-element embeddings.
#include <gtest/gtest.h>

#include <algorithm>

#include "plan_checks.h"
#include "plan_fixtures.h"
#include "shard/reshard.h"
#include "shard/shard_plan.h"

namespace psdp::shard {
namespace {

using testing::QwenModel;
using testing::qwenModels;
using testing::qwenParameters;

PlanConfig config(int w, int g, ShardLevel level) {
  PlanConfig c;
  c.world_size = w;
  c.group_size = g;
  c.level = level;
  return c;  // default chunk_bytes (64 MiB) and align_bytes (256)
}

TEST(QwenPlanTest, FixtureMatchesThePublishedShapes) {
  for (const QwenModel& m : qwenModels()) {
    const std::vector<BufferDesc> tensors = qwenParameters(m, false);
    uint64_t total = 0;
    for (const BufferDesc& t : tensors) total += t.count;
    EXPECT_EQ(tensors.size(), m.num_tensors) << m.name;
    EXPECT_EQ(total, m.num_parameters) << m.name;
  }
}

TEST(QwenPlanTest, SmallModelKeepsEveryPromise) {
  const std::vector<BufferDesc> buffers = qwenParameters(qwenModels()[0], true);  // bf16 weights, fp32 grads
  for (ShardLevel level : {ShardLevel::kGroup, ShardLevel::kWorld}) {
    for (auto [w, g] : {std::pair{8, 8}, {64, 8}, {24, 6}}) {
      SCOPED_TRACE(::testing::Message() << "W=" << w << " G=" << g << " level " << static_cast<int>(level));
      auto plan = ShardPlan::build(buffers, config(w, g, level));
      ASSERT_TRUE(plan.isOk()) << plan.status().toString();
      EXPECT_TRUE(testing::planInvariantsHold(plan.value()));
    }
  }
}

// The largest model at W = 1024: the state divides within one alignment unit per chunk.
TEST(QwenPlanTest, LargestModelBalancesAcrossAThousandRanks) {
  const QwenModel& m = qwenModels().back();
  const std::vector<BufferDesc> buffers = qwenParameters(m, true);
  for (ShardLevel level : {ShardLevel::kGroup, ShardLevel::kWorld}) {
    auto plan = ShardPlan::build(buffers, config(1024, 8, level));
    ASSERT_TRUE(plan.isOk()) << plan.status().toString();
    const ShardPlan& p = plan.value();
    const uint64_t unit = p.spaces()[0].unit;
    uint64_t lo = ~uint64_t{0}, hi = 0, sum = 0;
    for (int r = 0; r < 1024; ++r) {
      const uint64_t n = p.ownedCount(r);
      lo = std::min(lo, n);
      hi = std::max(hi, n);
      sum += n;
    }
    const uint64_t copies = level == ShardLevel::kGroup ? 1024 / 8 : 1;
    EXPECT_EQ(sum, m.num_parameters * copies);
    EXPECT_LE(hi - lo, unit * p.chunks().size());
    EXPECT_LE(hi - lo, unit);  // full chunks split exactly; only the last chunk can differ
  }
}

TEST(QwenPlanTest, ReshardBetweenDeployments) {
  const std::vector<BufferDesc> buffers = qwenParameters(qwenModels()[0], false);
  auto from = ShardPlan::build(buffers, config(8, 8, ShardLevel::kGroup));
  auto to = ShardPlan::build(buffers, config(24, 4, ShardLevel::kWorld));
  ASSERT_TRUE(from.isOk() && to.isOk());
  auto moves = reshardMoves(from.value(), to.value());
  ASSERT_TRUE(moves.isOk());
  EXPECT_TRUE(testing::reshardMovesValid(from.value(), to.value(), moves.value()));
}

}  // namespace
}  // namespace psdp::shard
