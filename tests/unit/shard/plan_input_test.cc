// Bad input: each rejected field gives invalid-argument with a message that names it.
#include "shard/plan_input.h"

#include <gtest/gtest.h>

#include <vector>

#include "shard/shard_plan.h"

namespace psdp::shard {
namespace {

std::vector<BufferDesc> goodBuffers() {
  return {
      {"w0", 1000, PSDP_BFLOAT16, Role::kParameter, MemoryKind::kHost, 0},
      {"w1", 10, PSDP_BFLOAT16, Role::kParameter, MemoryKind::kCuda, 1},
      {"w0.grad", 1000, PSDP_FLOAT32, Role::kGradient, MemoryKind::kHost, 0},
      {"w1.grad", 10, PSDP_FLOAT32, Role::kGradient, MemoryKind::kCuda, 1},
      {"exp_avg", 505, PSDP_FLOAT32, Role::kOptimizerState, MemoryKind::kHost, 0},
  };
}

PlanConfig goodConfig() {
  PlanConfig c;
  c.world_size = 8;
  c.group_size = 4;
  return c;
}

// Expects invalid-argument whose message contains every word of `words`.
void expectRejected(const std::vector<BufferDesc>& buffers, const PlanConfig& config,
                    std::initializer_list<const char*> words) {
  Status status = checkPlanInput(buffers, config);
  ASSERT_EQ(status.code(), PSDP_ERR_INVALID_ARGUMENT) << status.toString();
  for (const char* word : words) EXPECT_NE(status.message().find(word), std::string::npos) << status.message();
  EXPECT_FALSE(ShardPlan::build(buffers, config).isOk());
}

TEST(PlanInputTest, GoodInputPasses) {
  EXPECT_TRUE(checkPlanInput(goodBuffers(), goodConfig()).isOk());
}

TEST(PlanInputTest, ZeroBuffers) {
  expectRejected({}, goodConfig(), {"buffers", "empty"});
}

TEST(PlanInputTest, NoParameter) {
  std::vector<BufferDesc> b = {{"exp_avg", 5, PSDP_FLOAT32, Role::kOptimizerState, MemoryKind::kHost, 0}};
  expectRejected(b, goodConfig(), {"no parameter"});
}

TEST(PlanInputTest, ZeroLengthBuffer) {
  auto b = goodBuffers();
  b[1].count = 0;
  expectRejected(b, goodConfig(), {"buffers[1]", "'w1'", "count is 0"});
  b = goodBuffers();
  b[2].count = 0;
  expectRejected(b, goodConfig(), {"buffers[2]", "'w0.grad'", "count is 0"});
  b = goodBuffers();
  b[4].count = 0;  // optimizer state is sized by the plan: a rank may own nothing
  EXPECT_TRUE(checkPlanInput(b, goodConfig()).isOk());
}

TEST(PlanInputTest, GradientShard) {
  auto b = goodBuffers();
  b[1].memory = b[3].memory = MemoryKind::kHost;
  b.push_back({"main_grad", 0, PSDP_FLOAT32, Role::kGradientShard, MemoryKind::kHost, 0});
  EXPECT_TRUE(checkPlanInput(b, goodConfig()).isOk()) << "sized by the plan, like optimizer state";
  auto twice = b;
  twice.push_back({"main_grad2", 0, PSDP_FLOAT32, Role::kGradientShard, MemoryKind::kHost, 0});
  expectRejected(twice, goodConfig(), {"buffers[6]", "'main_grad2'", "second gradient shard", "buffers[5]"});
  auto narrow = b;
  narrow[5].dtype = PSDP_BFLOAT16;
  expectRejected(narrow, goodConfig(), {"buffers[5]", "'main_grad'", "float32", "bfloat16"});
  auto device = b;
  device[5].memory = MemoryKind::kCuda;
  expectRejected(device, goodConfig(), {"buffers[5]", "host memory"});
  auto wide = b;
  wide[2].dtype = PSDP_FLOAT64;
  expectRejected(wide, goodConfig(), {"buffers[2]", "'w0.grad'", "float64", "buffers[5]", "'main_grad'"});
  std::vector<BufferDesc> alone = {b[0], b[5]};
  expectRejected(alone, goodConfig(), {"buffers[1]", "without gradients"});
}

TEST(PlanInputTest, DuplicateName) {
  auto b = goodBuffers();
  b[3].name = "w0";
  expectRejected(b, goodConfig(), {"buffers[3]", "'w0'", "duplicate", "buffers[0]"});
  b = goodBuffers();
  b[2].name = "";
  expectRejected(b, goodConfig(), {"buffers[2]", "name is empty"});
}

TEST(PlanInputTest, UnknownEnums) {
  auto b = goodBuffers();
  b[0].dtype = static_cast<psdp_dtype_t>(42);
  expectRejected(b, goodConfig(), {"buffers[0]", "dtype 42"});
  b = goodBuffers();
  b[0].role = static_cast<Role>(7);
  expectRejected(b, goodConfig(), {"buffers[0]", "role 7"});
  b = goodBuffers();
  b[1].memory = static_cast<MemoryKind>(9);
  expectRejected(b, goodConfig(), {"buffers[1]", "memory kind 9"});
  b = goodBuffers();
  b[1].device = -1;
  expectRejected(b, goodConfig(), {"buffers[1]", "device -1"});
  PlanConfig c = goodConfig();
  c.level = static_cast<ShardLevel>(3);
  expectRejected(goodBuffers(), c, {"level 3"});
}

TEST(PlanInputTest, GradientsMustPairWithParameters) {
  auto b = goodBuffers();
  b[3].count = 11;
  expectRejected(b, goodConfig(), {"buffers[3]", "'w1.grad'", "buffers[1]", "count 11"});
  b = goodBuffers();
  b.erase(b.begin() + 3);
  expectRejected(b, goodConfig(), {"1 gradients for 2 parameters"});
}

TEST(PlanInputTest, GroupSizeMustDivideWorldSize) {
  PlanConfig c = goodConfig();
  c.group_size = 3;
  expectRejected(goodBuffers(), c, {"group_size 3", "world_size 8"});
  c.group_size = 0;
  expectRejected(goodBuffers(), c, {"group_size 0"});
  c = goodConfig();
  c.world_size = 0;
  expectRejected(goodBuffers(), c, {"world_size 0"});
}

TEST(PlanInputTest, AlignmentMustBeAPowerOfTwoNoSmallerThanTheDtype) {
  PlanConfig c = goodConfig();
  c.align_bytes = 384;
  expectRejected(goodBuffers(), c, {"align_bytes 384", "power of two"});
  c.align_bytes = 0;
  expectRejected(goodBuffers(), c, {"align_bytes 0"});
  c.align_bytes = 2;  // the float32 gradients need 4
  expectRejected(goodBuffers(), c, {"align_bytes 2", "float32", "buffers[2]", "'w0.grad'"});
  c.align_bytes = 4;
  EXPECT_TRUE(checkPlanInput(goodBuffers(), c).isOk());
  c.pad_bytes = 6;
  expectRejected(goodBuffers(), c, {"pad_bytes 6", "align_bytes 4"});
}

TEST(PlanInputTest, ChunkBytesMustBePositive) {
  PlanConfig c = goodConfig();
  c.chunk_bytes = 0;
  expectRejected(goodBuffers(), c, {"chunk_bytes"});
}

TEST(PlanInputTest, ByteSizeOverflow) {
  auto b = goodBuffers();
  b[0].count = b[2].count = uint64_t{1} << 62;  // 2^63 bytes of bfloat16 fit; 2^64 of float32 do not
  expectRejected(b, goodConfig(), {"buffers[2]", "'w0.grad'", "overflows"});
  b = goodBuffers();
  b[0].count = b[2].count = b[1].count = b[3].count = uint64_t{1} << 62;  // 2^63 bytes each
  b[2].dtype = b[3].dtype = PSDP_BFLOAT16;
  expectRejected(b, goodConfig(), {"buffers[1]", "'w1'", "beyond 64 bits"});
  b[0].count = b[2].count = b[1].count = b[3].count = uint64_t{1} << 60;  // fits; the planner bounds its units
  EXPECT_TRUE(checkPlanInput(b, goodConfig()).isOk());
}

TEST(PlanInputTest, RankLayoutMustBeAPermutation) {
  PlanConfig c = goodConfig();
  c.rank_layout = {0, 1, 2, 3, 4, 5, 6};
  expectRejected(goodBuffers(), c, {"rank_layout", "7 entries"});
  c.rank_layout = {0, 1, 2, 3, 4, 5, 6, 8};
  expectRejected(goodBuffers(), c, {"rank_layout[7] = 8"});
  c.rank_layout = {0, 1, 2, 3, 4, 5, 6, 2};
  expectRejected(goodBuffers(), c, {"rank_layout[7] = 2", "rank_layout[2]"});
  c.rank_layout = {7, 6, 5, 4, 3, 2, 1, 0};
  EXPECT_TRUE(checkPlanInput(goodBuffers(), c).isOk());
}

}  // namespace
}  // namespace psdp::shard
