// Multi-rank tests of the ring collectives: ranks are threads of this process, each with a real UCX
// transport. One test per world (size x progress mode) and kind; consecutive tests on one world share its
// transports. The largest counts are in collectives_long_test.cc.
#include "coll/host_collectives.h"

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <string>
#include <vector>

#include "unit/coll/collective_cases.h"

namespace psdp::coll::test {
namespace {

enum class Kind { kReduceScatter, kAllGather, kAllReduce, kBarrier };

// 100003 elements spread over many 1 KiB fragments and several rounds per block even at 7 ranks.
constexpr std::array<size_t, 5> kCounts = {0, 1, 7, 1000, 100003};
constexpr std::array<size_t, 2> kFragmentBytes = {1024, 1 << 20};

class CollectivesTest : public ::testing::TestWithParam<Kind> {
 protected:
  void run(int nranks, psdp_progress_mode_t mode) {
    UcxWorld* world = sharedWorld(nranks, mode);
    ASSERT_NE(world, nullptr);
    if (GetParam() == Kind::kBarrier) {
      runBarriers(*world, 20);
      return;
    }
    CaseKind kind = GetParam() == Kind::kReduceScatter ? CaseKind::kReduceScatter
                    : GetParam() == Kind::kAllGather   ? CaseKind::kAllGather
                                                       : CaseKind::kAllReduce;
    runCases(*world, combineCases(std::array{kind}, kCounts), kFragmentBytes);
  }
};

// One TEST_P per world: gtest runs every kind of one TEST_P before the next, so each world is built once.
TEST_P(CollectivesTest, OneRankThread) {
  run(1, PSDP_PROGRESS_THREAD);
}
TEST_P(CollectivesTest, OneRankCaller) {
  run(1, PSDP_PROGRESS_CALLER);
}
TEST_P(CollectivesTest, TwoRanksThread) {
  run(2, PSDP_PROGRESS_THREAD);
}
TEST_P(CollectivesTest, TwoRanksCaller) {
  run(2, PSDP_PROGRESS_CALLER);
}
TEST_P(CollectivesTest, ThreeRanksThread) {
  run(3, PSDP_PROGRESS_THREAD);
}
TEST_P(CollectivesTest, ThreeRanksCaller) {
  run(3, PSDP_PROGRESS_CALLER);
}
TEST_P(CollectivesTest, FourRanksThread) {
  run(4, PSDP_PROGRESS_THREAD);
}
TEST_P(CollectivesTest, FourRanksCaller) {
  run(4, PSDP_PROGRESS_CALLER);
}
TEST_P(CollectivesTest, SevenRanksThread) {
  run(7, PSDP_PROGRESS_THREAD);
}
TEST_P(CollectivesTest, SevenRanksCaller) {
  run(7, PSDP_PROGRESS_CALLER);
}

std::string kindName(const ::testing::TestParamInfo<Kind>& info) {
  switch (info.param) {
    case Kind::kReduceScatter: return "ReduceScatter";
    case Kind::kAllGather: return "AllGather";
    case Kind::kAllReduce: return "AllReduce";
    case Kind::kBarrier: return "Barrier";
  }
  return "Unknown";
}

INSTANTIATE_TEST_SUITE_P(Kinds, CollectivesTest,
                         ::testing::Values(Kind::kReduceScatter, Kind::kAllGather, Kind::kAllReduce, Kind::kBarrier),
                         kindName);

// Rank 1 never calls: rank 0's deadline expires, and the error names the operation and the peer.
TEST(CollectivesTimeoutTest, ALoneRankTimesOutNamingTheOperationAndThePeer) {
  auto world = UcxWorld::create(2, PSDP_PROGRESS_THREAD);
  ASSERT_TRUE(world.isOk()) << world.status().toString();
  // Buffers and collectives outlive the failed operations' posted transfers: they go after close().
  std::unique_ptr<Collectives> coll;
  std::unique_ptr<Collectives> other;
  std::vector<float> data(1000, 1.0f);
  world.value()->runRanks([&](int rank) {
    if (rank != 0) return;
    auto created = createHostCollectives(world.value()->transport(0), CollParams{0, 2, 1024, 0, nullptr});
    ASSERT_TRUE(created.isOk());
    coll = std::move(created).value();
    Status status =
        coll->allReduce(data.data(), data.data(), data.size(), PSDP_FLOAT32, PSDP_SUM, Deadline::after(0.3));
    EXPECT_EQ(status.code(), PSDP_ERR_TIMEOUT) << status.toString();
    EXPECT_NE(status.message().find("all-reduce #0 (count 1000, float32, sum)"), std::string::npos) << status.message();
    EXPECT_NE(status.message().find("peer 1"), std::string::npos) << status.message();
    // The failed communicator refuses further work with the first error.
    Status again = coll->barrier(Deadline::after(0.3));
    EXPECT_EQ(again.code(), PSDP_ERR_TIMEOUT);
    EXPECT_NE(again.message().find("all-reduce #0"), std::string::npos) << again.message();

    auto second = createHostCollectives(world.value()->transport(0), CollParams{0, 2, 1024, 1, nullptr});
    ASSERT_TRUE(second.isOk());
    other = std::move(second).value();
    Status barrier = other->barrier(Deadline::after(0.2));
    EXPECT_EQ(barrier.code(), PSDP_ERR_TIMEOUT) << barrier.toString();
    EXPECT_NE(barrier.message().find("barrier #0 timed out"), std::string::npos) << barrier.message();
    EXPECT_NE(barrier.message().find("peer 1"), std::string::npos) << barrier.message();
  });
  EXPECT_TRUE(world.value()->close().isOk());
}

// Rank 0 crashes (its transport vanishes without closing) while its neighbours run an all-reduce with it.
// Over TCP the closed sockets report the failure at once, so both neighbours return remote error well
// before their deadline: rank 1 through its receive from rank 0, rank 2 through its rendezvous sends to it.
TEST(CollectivesRemoteErrorTest, APeerCrashFailsItsNeighboursPromptly) {
  constexpr double kDeadlineSeconds = 20;
  transport::ucx::UcxOptions tcp;
  tcp.ucx_config = {{"TLS", "tcp,self"}};
  auto world = UcxWorld::create(3, PSDP_PROGRESS_THREAD, tcp);
  ASSERT_TRUE(world.isOk()) << world.status().toString();
  // Buffers and collectives outlive the failed operations' posted transfers: they go after close().
  std::vector<std::unique_ptr<Collectives>> colls(3);
  std::vector<std::vector<float>> buffers(3);
  world.value()->runRanks([&](int rank) {
    if (rank == 0) {
      world.value()->destroyTransport(0);
      return;
    }
    auto created = createHostCollectives(world.value()->transport(rank), CollParams{rank, 3, 1 << 20, 0, nullptr});
    ASSERT_TRUE(created.isOk());
    colls[static_cast<size_t>(rank)] = std::move(created).value();
    // 4 MiB in 1 MiB fragments: large enough for rendezvous, so sends wait on the receiver.
    std::vector<float>& data = buffers[static_cast<size_t>(rank)];
    data.assign(1 << 20, 1.0f);
    auto start = std::chrono::steady_clock::now();
    Status status = colls[static_cast<size_t>(rank)]->allReduce(data.data(), data.data(), data.size(), PSDP_FLOAT32,
                                                                PSDP_SUM, Deadline::after(kDeadlineSeconds));
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(status.code(), PSDP_ERR_REMOTE) << "rank " << rank << ": " << status.toString();
    EXPECT_LT(seconds, kDeadlineSeconds / 2) << "rank " << rank;
  });
  EXPECT_TRUE(world.value()->close().isOk());
}

TEST(CollectivesCreateTest, RejectsABadRankOrATinyChunk) {
  auto world = UcxWorld::create(1, PSDP_PROGRESS_CALLER);
  ASSERT_TRUE(world.isOk()) << world.status().toString();
  transport::Transport& transport = world.value()->transport(0);
  EXPECT_EQ(createHostCollectives(transport, CollParams{1, 1, 1024, 0, nullptr}).status().code(),
            PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(createHostCollectives(transport, CollParams{0, 1, kMinFragmentBytes - 1, 0, nullptr}).status().code(),
            PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(createHostCollectives(transport, CollParams{0, 1, kMinFragmentBytes, 0, nullptr}).isOk());
}

// Every built-in (dtype, op) runs; an op value that is neither built in nor a live premul-sum op of this
// object, or an unknown dtype, is an invalid argument.
TEST(CollectivesCreateTest, UnknownOpsAndDtypesAreRefused) {
  auto world = UcxWorld::create(1, PSDP_PROGRESS_CALLER);
  ASSERT_TRUE(world.isOk()) << world.status().toString();
  auto coll = createHostCollectives(world.value()->transport(0), CollParams{});
  ASSERT_TRUE(coll.isOk());
  double x = 3;
  EXPECT_TRUE(coll.value()->allReduce(&x, &x, 1, PSDP_FLOAT64, PSDP_AVG, Deadline::after(1)).isOk());
  EXPECT_EQ(x, 3.0);
  EXPECT_EQ(coll.value()->allReduce(&x, &x, 1, PSDP_FLOAT64, PSDP_NUM_OPS, Deadline::after(1)).code(),
            PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(coll.value()->reduceScatter(&x, &x, 1, PSDP_FLOAT32, static_cast<psdp_op_t>(-1), Deadline::after(1)).code(),
            PSDP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(coll.value()->allReduce(&x, &x, 1, PSDP_NUM_DTYPES, PSDP_SUM, Deadline::after(1)).code(),
            PSDP_ERR_INVALID_ARGUMENT);
  // A lone rank's premul-sum is its input times its scalar.
  double minus_two = -2;
  auto op = coll.value()->customOps().createPremulSum(&minus_two, PSDP_FLOAT64);
  ASSERT_TRUE(op.isOk());
  EXPECT_TRUE(coll.value()->allReduce(&x, &x, 1, PSDP_FLOAT64, op.value(), Deadline::after(1)).isOk());
  EXPECT_EQ(x, -6.0);
  // Gathering moves bytes only: any dtype works.
  EXPECT_TRUE(coll.value()->allGather(&x, &x, 1, PSDP_FLOAT64, Deadline::after(1)).isOk());
}

}  // namespace
}  // namespace psdp::coll::test
