// The ordering rule never deadlocks and never posts mismatched collectives: every readiness order on every
// rank (each rank its own permutation of the chunks) is run through the model (chunk_schedule_model.h) for
// small worlds, every shape (G = W; G < W at level group and at level world), windows 1 to 3 and both update
// policies, each with several adversarial interleavings of the other events. A broken rule (reductions and
// gathers sharing one team) is caught, so the checker can fail.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "unit/engine/chunk_schedule_model.h"

namespace psdp::engine::model {
namespace {

constexpr int kInterleavings = 2;

std::string describe(const WorldShape& s) {
  return "W=" + std::to_string(s.world) + " G=" + std::to_string(s.group) + (s.world_level ? " world" : " group") +
         " chunks=" + std::to_string(s.chunks) + " windows=" + std::to_string(s.reduce_window) + "/" +
         std::to_string(s.gather_window) +
         (s.policy == UpdatePolicy::kAnyTime ? " updates any time" : " updates after all reduced");
}

std::vector<std::vector<uint32_t>> permutations(size_t chunks) {
  std::vector<uint32_t> order(chunks);
  std::iota(order.begin(), order.end(), 0u);
  std::vector<std::vector<uint32_t>> all;
  do all.push_back(order);
  while (std::next_permutation(order.begin(), order.end()));
  return all;
}

// Every combination of one readiness order per rank: mixed-radix counting over the permutations. Returns
// the combinations run, or fails the test at the first failure with its orders.
size_t checkEveryReadinessOrder(const WorldShape& shape, std::mt19937_64& random) {
  const std::vector<std::vector<uint32_t>> orders = permutations(shape.chunks);
  std::vector<size_t> digit(static_cast<size_t>(shape.world), 0);
  std::vector<std::vector<uint32_t>> readiness(static_cast<size_t>(shape.world));
  size_t runs = 0;
  while (true) {
    for (size_t r = 0; r < digit.size(); ++r) readiness[r] = orders[digit[r]];
    for (int i = 0; i < kInterleavings; ++i) {
      std::string error = runStep(shape, readiness, random);
      if (!error.empty()) {
        ADD_FAILURE() << describe(shape) << ": " << error;
        return runs;
      }
    }
    ++runs;
    size_t r = 0;
    while (r < digit.size() && ++digit[r] == orders.size()) digit[r++] = 0;
    if (r == digit.size()) return runs;
  }
}

std::vector<WorldShape> shapesOf(int world, size_t chunks) {
  std::vector<WorldShape> shapes;
  for (int group : {world, 1}) {
    for (bool world_level : {false, true}) {
      if (group == world && world_level) continue;  // G = W has no replica stages: one shape
      for (auto [rw, gw] : {std::pair{1, 1}, {2, 2}, {3, 3}, {1, 3}, {3, 1}}) {
        for (UpdatePolicy policy : {UpdatePolicy::kAnyTime, UpdatePolicy::kAfterAllReduced}) {
          shapes.push_back(
              {world, group, world_level, chunks, static_cast<size_t>(rw), static_cast<size_t>(gw), policy});
        }
      }
    }
  }
  return shapes;
}

TEST(ChunkScheduleModelTest, TwoRanksFiveChunksEveryReadinessOrder) {
  std::mt19937_64 random(1);
  for (const WorldShape& shape : shapesOf(2, 5)) {
    EXPECT_EQ(checkEveryReadinessOrder(shape, random), 120u * 120u) << describe(shape);
  }
}

TEST(ChunkScheduleModelTest, ThreeRanksFourChunksEveryReadinessOrder) {
  std::mt19937_64 random(2);
  for (const WorldShape& shape : shapesOf(3, 4)) {
    if (shape.reduce_window == 2) continue;  // windows 1 and 3 bracket it; 2 runs at W = 2 and 4
    EXPECT_EQ(checkEveryReadinessOrder(shape, random), 24u * 24u * 24u) << describe(shape);
  }
}

// W = 4 with G = 2 as well: two shard groups of two, two replica groups of two.
TEST(ChunkScheduleModelTest, FourRanksThreeChunksEveryReadinessOrder) {
  std::mt19937_64 random(3);
  std::vector<WorldShape> shapes = shapesOf(4, 3);
  for (const WorldShape& s : shapesOf(4, 3)) {
    if (s.group != 1) continue;
    for (bool world_level : {false, true}) {
      WorldShape two = s;
      two.group = 2;
      two.world_level = world_level;
      shapes.push_back(two);
    }
  }
  for (const WorldShape& shape : shapes) {
    EXPECT_EQ(checkEveryReadinessOrder(shape, random), 6u * 6u * 6u * 6u) << describe(shape);
  }
}

// Five chunks at W = 4: 120^4 combinations are too many to run each time; a random sample of them.
TEST(ChunkScheduleModelTest, FourRanksFiveChunksSampledReadinessOrders) {
  std::mt19937_64 random(4);
  std::vector<std::vector<uint32_t>> readiness(4, std::vector<uint32_t>{0, 1, 2, 3, 4});
  for (WorldShape shape : shapesOf(4, 5)) {
    shape.group = shape.group == 1 ? 2 : shape.group;
    for (int i = 0; i < 200; ++i) {
      for (auto& order : readiness) std::shuffle(order.begin(), order.end(), random);
      std::string error = runStep(shape, readiness, random);
      ASSERT_TRUE(error.empty()) << describe(shape) << ": " << error;
    }
  }
}

// Any agreed orders will do: reductions in forward order, like the gathers.
TEST(ChunkScheduleModelTest, ForwardReductionsEveryReadinessOrder) {
  std::mt19937_64 random(6);
  for (WorldShape shape : shapesOf(2, 4)) {
    shape.forward_reductions = true;
    EXPECT_EQ(checkEveryReadinessOrder(shape, random), 24u * 24u) << describe(shape);
  }
}

// The checker must be able to fail: with the gathers of the group on the reductions' team, a rank whose
// first chunk is updated before its second is reduced posts the gather between the two reductions, another
// rank after them.
TEST(ChunkScheduleModelTest, ABrokenRuleIsCaught) {
  std::mt19937_64 random(5);
  WorldShape shape{2, 2, false, 3, 3, 3, UpdatePolicy::kAnyTime};
  shape.forward_reductions = true;
  shape.one_group_team = true;
  const std::vector<std::vector<uint32_t>> orders = permutations(3);
  std::string error;
  for (const auto& a : orders) {
    for (const auto& b : orders) {
      for (int i = 0; i < 20 && error.empty(); ++i) error = runStep(shape, {a, b}, random);
    }
  }
  EXPECT_NE(error.find("mismatch"), std::string::npos) << "no failure found: " << error;
}

}  // namespace
}  // namespace psdp::engine::model
