// ChunkSchedule on one rank: what it posts and when, for each level, and the events it refuses.
#include "engine/chunk_schedule.h"

#include <gtest/gtest.h>

#include <vector>

namespace psdp::engine {
namespace {

ScheduleParams params(size_t chunks, size_t window, bool reduce_across, bool gather_across) {
  ScheduleParams p;
  p.chunks = chunks;
  p.reduce_order = ScheduleParams::backward(chunks);
  p.gather_order = ScheduleParams::forward(chunks);
  p.reduce_window = p.gather_window = window;
  p.reduce_across_replicas = reduce_across;
  p.gather_across_replicas = gather_across;
  return p;
}

std::vector<Post> drain(ChunkSchedule& s) {
  std::vector<Post> posts;
  while (std::optional<Post> p = s.nextPost()) posts.push_back(*p);
  return posts;
}

TEST(ChunkScheduleTest, ReducesInTheFixedOrderWhateverTheReadinessOrder) {
  ChunkSchedule s = ChunkSchedule::create(params(3, 3, false, false)).value();
  ASSERT_TRUE(s.gradientsReady(0).isOk());
  EXPECT_TRUE(drain(s).empty()) << "chunk 2 comes first in backward order";
  EXPECT_EQ(s.state(0), ChunkState::kGradientsReady);
  ASSERT_TRUE(s.gradientsReady(2).isOk());
  EXPECT_EQ(drain(s), (std::vector<Post>{{2, Stage::kReduceInGroup}}));
  ASSERT_TRUE(s.gradientsReady(1).isOk());
  EXPECT_EQ(drain(s), (std::vector<Post>{{1, Stage::kReduceInGroup}, {0, Stage::kReduceInGroup}}));
  EXPECT_EQ(s.reducing(), 3u);
}

TEST(ChunkScheduleTest, TheWindowBoundsChunksInTheirReduceStages) {
  ChunkSchedule s = ChunkSchedule::create(params(3, 1, true, false)).value();
  for (uint32_t c = 0; c < 3; ++c) ASSERT_TRUE(s.gradientsReady(c).isOk());
  EXPECT_EQ(drain(s), (std::vector<Post>{{2, Stage::kReduceInGroup}}));
  ASSERT_TRUE(s.stageDone(2, Stage::kReduceInGroup).isOk());
  EXPECT_EQ(drain(s), (std::vector<Post>{{2, Stage::kReduceAcrossReplicas}}))
      << "the slot is held until the last reduction";
  EXPECT_FALSE(s.nextReduced());
  ASSERT_TRUE(s.stageDone(2, Stage::kReduceAcrossReplicas).isOk());
  EXPECT_EQ(s.state(2), ChunkState::kReduced);
  EXPECT_EQ(drain(s), (std::vector<Post>{{1, Stage::kReduceInGroup}})) << "a reduced chunk holds no slot";
  EXPECT_EQ(s.nextReduced(), 2u);
  EXPECT_FALSE(s.nextReduced());
}

TEST(ChunkScheduleTest, GathersFollowTheGatherOrderFromTheUpdateOn) {
  ChunkSchedule s = ChunkSchedule::create(params(2, 2, true, true)).value();
  for (uint32_t c : {0u, 1u}) ASSERT_TRUE(s.gradientsReady(c).isOk());
  drain(s);
  for (uint32_t c : {1u, 0u}) ASSERT_TRUE(s.stageDone(c, Stage::kReduceInGroup).isOk());
  EXPECT_EQ(drain(s), (std::vector<Post>{{1, Stage::kReduceAcrossReplicas}, {0, Stage::kReduceAcrossReplicas}}));
  for (uint32_t c : {0u, 1u}) ASSERT_TRUE(s.stageDone(c, Stage::kReduceAcrossReplicas).isOk());
  EXPECT_EQ(s.nextReduced(), 0u);
  EXPECT_EQ(s.nextReduced(), 1u);
  ASSERT_TRUE(s.updated(1).isOk());
  EXPECT_TRUE(drain(s).empty()) << "chunk 0 gathers first";
  ASSERT_TRUE(s.updated(0).isOk());
  EXPECT_EQ(drain(s), (std::vector<Post>{{0, Stage::kGatherAcrossReplicas}, {1, Stage::kGatherAcrossReplicas}}));
  ASSERT_TRUE(s.stageDone(1, Stage::kGatherAcrossReplicas).isOk());
  EXPECT_TRUE(drain(s).empty()) << "the group gathers keep the gather order too";
  ASSERT_TRUE(s.stageDone(0, Stage::kGatherAcrossReplicas).isOk());
  EXPECT_EQ(drain(s), (std::vector<Post>{{0, Stage::kGatherInGroup}, {1, Stage::kGatherInGroup}}));
  for (uint32_t c : {0u, 1u}) ASSERT_TRUE(s.stageDone(c, Stage::kGatherInGroup).isOk());
  EXPECT_TRUE(s.done());
}

TEST(ChunkScheduleTest, EventsThatCannotHappenAreInvalidUsage) {
  ChunkSchedule s = ChunkSchedule::create(params(2, 1, false, false)).value();
  EXPECT_EQ(s.updated(0).code(), PSDP_ERR_INVALID_USAGE) << "not reduced";
  EXPECT_EQ(s.stageDone(0, Stage::kReduceInGroup).code(), PSDP_ERR_INVALID_USAGE) << "not posted";
  EXPECT_EQ(s.gradientsReady(5).code(), PSDP_ERR_INVALID_ARGUMENT);
  ASSERT_TRUE(s.gradientsReady(1).isOk());
  Status twice = s.gradientsReady(1);
  EXPECT_EQ(twice.code(), PSDP_ERR_INVALID_USAGE);
  EXPECT_NE(twice.message().find("chunk 1 is gradients ready"), std::string::npos) << twice.message();
  drain(s);
  ASSERT_TRUE(s.stageDone(1, Stage::kReduceInGroup).isOk());
  EXPECT_EQ(s.updated(1).code(), PSDP_ERR_INVALID_USAGE) << "reduced but not handed out";
  EXPECT_EQ(s.nextReduced(), 1u);
  EXPECT_TRUE(s.updated(1).isOk());
  EXPECT_EQ(s.updated(1).code(), PSDP_ERR_INVALID_USAGE) << "updated twice";
}

TEST(ChunkScheduleTest, BadParametersAreNamed) {
  ScheduleParams p = params(3, 1, false, false);
  p.reduce_order = {2, 1, 1};
  EXPECT_NE(ChunkSchedule::create(p).status().message().find("reduce order names chunk 1 twice"), std::string::npos);
  p = params(3, 1, false, false);
  p.gather_order = {0, 1};
  EXPECT_EQ(ChunkSchedule::create(p).status().code(), PSDP_ERR_INVALID_ARGUMENT);
  p = params(3, 0, false, false);
  EXPECT_NE(ChunkSchedule::create(p).status().message().find("window of 0"), std::string::npos);
  EXPECT_EQ(ChunkSchedule::create(params(0, 1, false, false)).status().code(), PSDP_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace psdp::engine
