// A rank's transport is destroyed abruptly (no close) while a peer waits on it.
//
// The ranks run over TCP here. On shared memory UCX finds a dead peer only through its keepalive, which
// checks whether the peer's process is alive: ranks in one process never look dead, so the in-process
// rig cannot show detection on shm (between processes it takes up to UCX_KEEPALIVE_INTERVAL, 20 s by
// default). Over TCP the closed sockets report the failure at once.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "unit/transport/ucx_rank_group.h"

namespace psdp::transport::ucx {
namespace {

using testing::expectDone;
using testing::GroupSpec;
using testing::RankContext;
using testing::runRanks;

constexpr double kDetectionSeconds = 5.0;
constexpr size_t kRendezvousBytes = 4 << 20;

class UcxPeerFailureTest : public ::testing::TestWithParam<psdp_progress_mode_t> {};

TEST_P(UcxPeerFailureTest, PendingOpsOnADeadPeerCompleteWithRemote) {
  GroupSpec spec = GroupSpec::of(3, GetParam());
  spec.options.ucx_config = {{"TLS", "tcp,self"}};
  runRanks(spec, [](RankContext& ctx) {
    constexpr int kVictim = 0;
    uint64_t word = 0;
    std::vector<uint8_t> big(kRendezvousBytes, 1);
    Completion recv_from_victim, send_to_victim;
    if (ctx.rank != kVictim) {
      ASSERT_TRUE(ctx.transport->recv(kVictim, 5, &word, sizeof(word), &recv_from_victim).isOk());
      // The victim never posts the matching recv: the rendezvous waits for a reply that will not come.
      ASSERT_TRUE(ctx.transport->send(kVictim, 6, big.data(), big.size(), &send_to_victim).isOk());
    }
    ctx.sync.arrive_and_wait();
    if (ctx.rank == kVictim) {
      ctx.transport.reset();
      return;
    }
    auto start = std::chrono::steady_clock::now();
    Status status = waitFor(*ctx.transport, recv_from_victim, Deadline::after(kDetectionSeconds));
    EXPECT_EQ(status.code(), PSDP_ERR_REMOTE) << status.toString();
    EXPECT_NE(status.message().find("peer 0"), std::string::npos) << status.message();
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::duration<double>(kDetectionSeconds));
    status = waitFor(*ctx.transport, send_to_victim, Deadline::after(kDetectionSeconds));
    EXPECT_EQ(status.code(), PSDP_ERR_REMOTE) << status.toString();

    // Later operations on the dead peer fail at once and write no completion.
    Completion later;
    EXPECT_EQ(ctx.transport->send(kVictim, 1, &word, sizeof(word), &later).code(), PSDP_ERR_REMOTE);
    EXPECT_EQ(ctx.transport->recv(kVictim, 1, &word, sizeof(word), &later).code(), PSDP_ERR_REMOTE);
    EXPECT_FALSE(later.isDone());

    // The survivors still talk to each other.
    int other = ctx.rank == 1 ? 2 : 1;
    uint64_t out = 40 + ctx.rank, in = 0;
    Completion sent, received;
    ASSERT_TRUE(ctx.transport->recv(other, 8, &in, sizeof(in), &received).isOk());
    ASSERT_TRUE(ctx.transport->send(other, 8, &out, sizeof(out), &sent).isOk());
    expectDone(*ctx.transport, received, "survivor recv");
    expectDone(*ctx.transport, sent, "survivor send");
    EXPECT_EQ(in, 40u + other);
  });
}

INSTANTIATE_TEST_SUITE_P(Modes, UcxPeerFailureTest, ::testing::Values(PSDP_PROGRESS_THREAD, PSDP_PROGRESS_CALLER),
                         [](const auto& info) { return testing::modeName(info.param); });

}  // namespace
}  // namespace psdp::transport::ucx
