#include "shard/plan_hash.h"

#include <gtest/gtest.h>

#include <vector>

namespace psdp::shard {
namespace {

BufferDesc buffer(const char* name, uint64_t count, Role role) {
  return BufferDesc{name, count, PSDP_FLOAT32, role, MemoryKind::kHost, 0};
}

// Registration compares what every rank must agree on, and nothing a rank chooses alone.
TEST(RegistrationDigestTest, CoversWhatRanksShareOnly) {
  const BufferDesc w = buffer("w", 1000, Role::kParameter);
  const uint64_t d = registrationDigest(w);
  EXPECT_EQ(registrationDigest(w), d);
  BufferDesc other = w;
  other.device = 3;  // each rank's own
  EXPECT_EQ(registrationDigest(other), d);
  for (auto change : std::vector<void (*)(BufferDesc&)>{
           [](BufferDesc& b) { b.name = "v"; }, [](BufferDesc& b) { b.count = 999; },
           [](BufferDesc& b) { b.dtype = PSDP_BFLOAT16; }, [](BufferDesc& b) { b.role = Role::kGradient; },
           [](BufferDesc& b) { b.memory = MemoryKind::kCuda; }}) {
    other = w;
    change(other);
    EXPECT_NE(registrationDigest(other), d);
  }
  // Optimizer state is sized per rank by the plan: its count is not compared.
  EXPECT_EQ(registrationDigest(buffer("m", 10, Role::kOptimizerState)),
            registrationDigest(buffer("m", 12, Role::kOptimizerState)));
  // So is the gradient shard, whose role still is.
  EXPECT_EQ(registrationDigest(buffer("g", 10, Role::kGradientShard)),
            registrationDigest(buffer("g", 12, Role::kGradientShard)));
  EXPECT_NE(registrationDigest(buffer("g", 10, Role::kGradientShard)),
            registrationDigest(buffer("g", 10, Role::kOptimizerState)));
}

TEST(RegistrationDigestTest, ConfigDigestIgnoresWhatTheCommunicatorDecides) {
  PlanConfig a;
  a.group_size = 4;
  const uint64_t d = configDigest(a);
  PlanConfig b = a;
  b.world_size = 64;
  b.rank_layout = {1, 0};
  EXPECT_EQ(configDigest(b), d);
  b = a;
  b.chunk_bytes *= 2;
  EXPECT_NE(configDigest(b), d);
  b = a;
  b.level = ShardLevel::kWorld;
  EXPECT_NE(configDigest(b), d);
}

TEST(RegistrationDigestTest, ListDigestKeepsOrder) {
  const std::vector<uint64_t> ab = {1, 2}, ba = {2, 1}, a = {1};
  EXPECT_NE(digestOf(ab), digestOf(ba));
  EXPECT_NE(digestOf(ab), digestOf(a));
  EXPECT_EQ(digestOf(ab), digestOf(std::vector<uint64_t>{1, 2}));
}

}  // namespace
}  // namespace psdp::shard
