// Multi-rank tests of the chain broadcast: ranks are threads of this process, each with a real UCX
// transport. Small fragments (1 KiB) force long pipelines; every root, in place and out of place.
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "coll/host_collectives.h"
#include "unit/coll/collective_cases.h"
#include "unit/coll/ucx_world.h"

namespace psdp::coll::test {
namespace {

constexpr std::array<size_t, 5> kCounts = {0, 1, 7, 1000, 100003};
constexpr double kSeconds = 60;

int32_t value(int root, size_t i) {
  return static_cast<int32_t>(root * 100000 + static_cast<int>(i % 99991));
}

void runBroadcasts(int nranks, psdp_progress_mode_t mode) {
  UcxWorld* world = sharedWorld(nranks, mode);
  ASSERT_NE(world, nullptr);
  world->runRanks([&](int rank) {
    CollParams params{rank, nranks, 1024, 200, nullptr};
    auto created = createHostCollectives(world->transport(rank), params);
    ASSERT_TRUE(created.isOk()) << created.status().toString();
    Collectives& coll = *created.value();
    for (size_t count : kCounts) {
      for (int root = 0; root < nranks; ++root) {
        for (bool in_place : {false, true}) {
          std::vector<int32_t> send(count), recv(count + 1, -1);
          for (size_t i = 0; i < count; ++i) send[i] = value(root, i);
          if (in_place && rank == root) std::copy(send.begin(), send.end(), recv.begin());
          const void* sendbuf = in_place ? recv.data() : send.data();
          Status status = coll.broadcast(sendbuf, recv.data(), count, PSDP_INT32, root, Deadline::after(kSeconds));
          std::string what = "rank " + std::to_string(rank) + " root " + std::to_string(root) + " count " +
                             std::to_string(count) + (in_place ? " in place" : "");
          ASSERT_TRUE(status.isOk()) << what << ": " << status.toString();
          for (size_t i = 0; i < count; ++i) ASSERT_EQ(recv[i], value(root, i)) << what << " element " << i;
          EXPECT_EQ(recv[count], -1) << what << ": wrote past the end";
        }
      }
    }
    Status bad = coll.broadcast(nullptr, nullptr, 0, PSDP_INT32, nranks, Deadline::after(kSeconds));
    EXPECT_EQ(bad.code(), PSDP_ERR_INVALID_ARGUMENT) << bad.toString();
  });
}

TEST(ChainBroadcastTest, OneRank) {
  runBroadcasts(1, PSDP_PROGRESS_CALLER);
}
TEST(ChainBroadcastTest, TwoRanksThread) {
  runBroadcasts(2, PSDP_PROGRESS_THREAD);
}
TEST(ChainBroadcastTest, ThreeRanksCaller) {
  runBroadcasts(3, PSDP_PROGRESS_CALLER);
}
TEST(ChainBroadcastTest, FourRanksThread) {
  runBroadcasts(4, PSDP_PROGRESS_THREAD);
}
TEST(ChainBroadcastTest, SevenRanksCaller) {
  runBroadcasts(7, PSDP_PROGRESS_CALLER);
}

}  // namespace
}  // namespace psdp::coll::test
