// Multi-rank tests of the UCX transport: ranks are threads of this process, each with its own UCP context
// and worker, connected by whatever UCX picks in-process (shared memory by default).
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <sstream>
#include <tuple>
#include <vector>

#include "base/environment.h"
#include "unit/transport/ucx_rank_group.h"

namespace psdp::transport::ucx {
namespace {

using testing::expectDone;
using testing::GroupSpec;
using testing::kTestTimeoutSeconds;
using testing::RankContext;
using testing::runRanks;

// 4 MiB is far above every eager threshold (rendezvous); 8 KiB sits around the shm/tcp eager limits.
constexpr size_t kSizes[] = {0, 1, 8 << 10, 4 << 20};

uint8_t pattern(int sender, size_t index, size_t size) {
  return static_cast<uint8_t>((sender * 131 + index * 7 + size) % 251);
}

class UcxGroupTest : public ::testing::TestWithParam<std::tuple<int, psdp_progress_mode_t>> {
 protected:
  GroupSpec spec() const { return GroupSpec::of(std::get<0>(GetParam()), std::get<1>(GetParam())); }
};

// Each rank sends to its right neighbour and receives from its left one (itself when alone).
TEST_P(UcxGroupTest, RingExchangeOfEverySize) {
  runRanks(spec(), [](RankContext& ctx) {
    int right = (ctx.rank + 1) % ctx.nranks, left = (ctx.rank + ctx.nranks - 1) % ctx.nranks;
    for (size_t size : kSizes) {
      std::vector<uint8_t> out(size), in(size, 0xff);
      for (size_t i = 0; i < size; ++i) out[i] = pattern(ctx.rank, i, size);
      Completion sent, received;
      ASSERT_TRUE(ctx.transport->recv(left, size, in.data(), size, &received).isOk());
      ASSERT_TRUE(ctx.transport->send(right, size, out.data(), size, &sent).isOk());
      expectDone(*ctx.transport, received, "ring recv");
      expectDone(*ctx.transport, sent, "ring send");
      size_t wrong = 0;
      for (size_t i = 0; i < size; ++i) wrong += in[i] != pattern(left, i, size);
      EXPECT_EQ(wrong, 0u) << "rank " << ctx.rank << " size " << size;
    }
  });
}

// Every rank sends kCount messages to every rank (itself included) at once: distinct tags, received in the
// reverse order of sending, and equal tags mixing eager and rendezvous sizes, which must match in order.
TEST_P(UcxGroupTest, ManyConcurrentMessagesKeepEqualTagOrder) {
  constexpr int kCount = 32;
  constexpr Tag kDistinctBase = 1000, kSameTag = 7;
  constexpr size_t kLarge = 64 << 10;
  runRanks(spec(), [&](RankContext& ctx) {
    const int n = ctx.nranks;
    auto slot = [&](int peer, int i) { return static_cast<size_t>(peer * kCount + i); };
    std::vector<uint64_t> distinct_out(n * kCount), distinct_in(n * kCount, ~0ull);
    std::vector<std::vector<uint64_t>> same_out(n * kCount), same_in(n * kCount);
    auto completions = std::make_unique<Completion[]>(4 * n * kCount);
    Completion* next = completions.get();
    for (int peer = 0; peer < n; ++peer) {
      for (int i = kCount - 1; i >= 0; --i) {
        ASSERT_TRUE(ctx.transport->recv(peer, kDistinctBase + i, &distinct_in[slot(peer, i)], 8, next++).isOk());
      }
      for (int i = 0; i < kCount; ++i) {
        same_in[slot(peer, i)].assign((i % 2 ? kLarge : 8) / 8, ~0ull);
        ASSERT_TRUE(
            ctx.transport->recv(peer, kSameTag, same_in[slot(peer, i)].data(), i % 2 ? kLarge : 8, next++).isOk());
      }
    }
    for (int peer = 0; peer < n; ++peer) {
      for (int i = 0; i < kCount; ++i) {
        distinct_out[slot(peer, i)] = static_cast<uint64_t>(ctx.rank) << 32 | i;
        ASSERT_TRUE(ctx.transport->send(peer, kDistinctBase + i, &distinct_out[slot(peer, i)], 8, next++).isOk());
        same_out[slot(peer, i)].assign((i % 2 ? kLarge : 8) / 8, static_cast<uint64_t>(ctx.rank) << 32 | i);
        ASSERT_TRUE(
            ctx.transport->send(peer, kSameTag, same_out[slot(peer, i)].data(), i % 2 ? kLarge : 8, next++).isOk());
      }
    }
    for (Completion* c = completions.get(); c != next; ++c) expectDone(*ctx.transport, *c, "concurrent op");
    for (int peer = 0; peer < n; ++peer) {
      for (int i = 0; i < kCount; ++i) {
        uint64_t expected = static_cast<uint64_t>(peer) << 32 | i;
        EXPECT_EQ(distinct_in[slot(peer, i)], expected) << "distinct tag from peer " << peer << " #" << i;
        const auto& got = same_in[slot(peer, i)];
        EXPECT_TRUE(got.front() == expected && got.back() == expected)
            << "equal tag from peer " << peer << " #" << i << " got " << (got.front() & 0xffffffff);
      }
    }
  });
}

// Nothing is sent, so both a bare wait and a wait on a posted recv must end at the 50 ms deadline.
TEST_P(UcxGroupTest, WaitEventsTimesOutWhenNothingArrives) {
  runRanks(spec(), [](RankContext& ctx) {
    using Clock = std::chrono::steady_clock;
    auto start = Clock::now();
    Status status = ctx.transport->waitEvents(ctx.transport->eventCount(), Deadline::after(0.05));
    auto elapsed = Clock::now() - start;
    EXPECT_EQ(status.code(), PSDP_ERR_TIMEOUT) << status.toString();
    EXPECT_GE(elapsed, std::chrono::milliseconds(50));
    EXPECT_LT(elapsed, std::chrono::seconds(2));

    uint64_t word = 0;
    Completion received;
    ASSERT_TRUE(ctx.transport->recv((ctx.rank + 1) % ctx.nranks, 99, &word, 8, &received).isOk());
    start = Clock::now();
    status = waitFor(*ctx.transport, received, Deadline::after(0.05));
    EXPECT_EQ(status.code(), PSDP_ERR_TIMEOUT) << status.toString();
    EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(50));
    EXPECT_FALSE(received.isDone());
    // The recv is still posted: close() completes it with aborted while `received` is still alive.
    ctx.sync.arrive_and_wait();
    EXPECT_TRUE(ctx.transport->close(Deadline::after(kTestTimeoutSeconds)).isOk());
    ASSERT_TRUE(received.isDone());
    EXPECT_EQ(received.status.code(), PSDP_ERR_ABORTED) << received.status.toString();
    ctx.transport.reset();
  });
}

INSTANTIATE_TEST_SUITE_P(RanksAndModes, UcxGroupTest,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4),
                                            ::testing::Values(PSDP_PROGRESS_THREAD, PSDP_PROGRESS_CALLER)),
                         [](const auto& info) {
                           return std::to_string(std::get<0>(info.param)) + "Ranks" +
                                  testing::modeName(std::get<1>(info.param));
                         });

// ---- what UCX picked, and threads --------------------------------------------------------------------------

// One stream per rank: ranks log concurrently, and spdlog's sinks serialise only their own writes.
struct CapturedLogs {
  std::ostringstream text[2];
  std::function<Logger(int)> factory() {
    return [this](int rank) {
      auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(text[rank]);
      auto logger = std::make_shared<spdlog::logger>("psdp", sink);
      logger->set_pattern("%v");
      logger->set_level(spdlog::level::info);
      return logger;
    };
  }
};

bool userChoseUcxTransports() {
  const auto& env = ProcessEnvironment::instance();
  return env.get("UCX_TLS") || env.get("UCX_POSIX_ERROR_HANDLING") || env.get("UCX_SYSV_ERROR_HANDLING") ||
         env.get("UCX_CMA_MEMORY_INVALIDATE");
}

std::string lanesLine(const std::string& logs, const std::string& prefix) {
  size_t at = logs.find(prefix);
  return at == std::string::npos ? std::string() : logs.substr(at, logs.find('\n', at) - at);
}

// Connects `spec`'s group with UCX settings resolved from `env` and returns rank 0's lanes line for peer 1.
std::string peerOneLanes(GroupSpec spec, const Environment& env) {
  CapturedLogs logs;
  spec.options.env = &env;
  spec.logger = logs.factory();
  runRanks(spec, [](RankContext&) {});
  std::string line = lanesLine(logs.text[0].str(), "peer 1 lanes ");
  EXPECT_FALSE(line.empty()) << logs.text[0].str();
  return line;
}

// Lane tests assert psdp's own UCX choices, which a user's UCX_* variables override by design.
#define PSDP_SKIP_IF_USER_CHOSE_UCX_TRANSPORTS()                                                           \
  do {                                                                                                     \
    if (userChoseUcxTransports()) {                                                                        \
      GTEST_SKIP() << "UCX_TLS, UCX_*_ERROR_HANDLING or UCX_CMA_MEMORY_INVALIDATE set in the environment"; \
    }                                                                                                      \
  } while (0)

// psdp turns on shared-memory error handling, so ranks of one host (here: one process) use shm, and connect
// logs it, one line per peer.
TEST(UcxLanesTest, ConnectLogsSharedMemoryLanesByDefault) {
  PSDP_SKIP_IF_USER_CHOSE_UCX_TRANSPORTS();
  CapturedLogs logs;
  MapEnvironment no_user_choice;
  GroupSpec spec = GroupSpec::of(2);
  spec.options.env = &no_user_choice;
  spec.logger = logs.factory();
  runRanks(spec, [](RankContext&) {});
  std::string line = lanesLine(logs.text[0].str(), "peer 1 lanes ");
  ASSERT_FALSE(line.empty()) << logs.text[0].str();
  EXPECT_TRUE(line.find("sysv/") != std::string::npos || line.find("posix/") != std::string::npos) << line;
  EXPECT_FALSE(lanesLine(logs.text[1].str(), "peer 1 lanes ").empty()) << "no line for the self peer";
}

// psdp lets CMA advertise memory invalidation, so UCX keeps its single-copy rendezvous lane (rma_bw) for
// endpoints with peer error handling; without it large messages are copied through sysv/posix.
TEST(UcxLanesTest, ConnectKeepsACmaRendezvousLaneByDefault) {
  PSDP_SKIP_IF_USER_CHOSE_UCX_TRANSPORTS();
  MapEnvironment no_user_choice;
  std::string line = peerOneLanes(GroupSpec::of(2), no_user_choice);
  ASSERT_FALSE(line.empty());
  EXPECT_NE(line.find("cma/"), std::string::npos) << line;
  EXPECT_NE(line.find("rma_bw"), std::string::npos) << line;
}

// A user who sets UCX_CMA_MEMORY_INVALIDATE owns the decision: with UCX's default (n) kept, UCX 1.13 drops
// CMA from endpoints with peer error handling.
TEST(UcxLanesTest, UserCmaInvalidateChoiceIsLeftAlone) {
  PSDP_SKIP_IF_USER_CHOSE_UCX_TRANSPORTS();
  MapEnvironment user_choice(std::map<std::string, std::string>{{"UCX_CMA_MEMORY_INVALIDATE", "n"}});
  std::string line = peerOneLanes(GroupSpec::of(2), user_choice);
  ASSERT_FALSE(line.empty());
  EXPECT_EQ(line.find("cma/"), std::string::npos) << line;
  EXPECT_TRUE(line.find("sysv/") != std::string::npos || line.find("posix/") != std::string::npos) << line;
}

// Caller progress keeps UCX's default: a CMA rendezvous needs the receiver to progress after its recv
// completed (ManyConcurrentMessagesKeepEqualTagOrder/4RanksCaller stalled with it).
TEST(UcxLanesTest, CallerProgressLeavesCmaRendezvousOff) {
  PSDP_SKIP_IF_USER_CHOSE_UCX_TRANSPORTS();
  MapEnvironment no_user_choice;
  std::string line = peerOneLanes(GroupSpec::of(2, PSDP_PROGRESS_CALLER), no_user_choice);
  ASSERT_FALSE(line.empty());
  EXPECT_EQ(line.find("cma/"), std::string::npos) << line;
}

// An explicit UCX option of the caller is applied after psdp's choices, so it wins.
TEST(UcxLanesTest, CallerUcxOptionOverridesPsdpChoice) {
  PSDP_SKIP_IF_USER_CHOSE_UCX_TRANSPORTS();
  MapEnvironment no_user_choice;
  GroupSpec spec = GroupSpec::of(2);
  spec.options.ucx_config = {{"MEMORY_INVALIDATE", "n"}};
  std::string line = peerOneLanes(spec, no_user_choice);
  ASSERT_FALSE(line.empty());
  EXPECT_EQ(line.find("cma/"), std::string::npos) << line;
}

// A user who sets UCX_POSIX_ERROR_HANDLING owns the decision; psdp leaves UCX's default (off), and UCX
// then keeps shared memory away from endpoints with peer error handling.
TEST(UcxLanesTest, UserErrorHandlingChoiceIsLeftAlone) {
  PSDP_SKIP_IF_USER_CHOSE_UCX_TRANSPORTS();
  MapEnvironment user_choice(std::map<std::string, std::string>{{"UCX_POSIX_ERROR_HANDLING", "n"}});
  std::string line = peerOneLanes(GroupSpec::of(2), user_choice);
  ASSERT_FALSE(line.empty());
  EXPECT_EQ(line.find("sysv/"), std::string::npos) << line;
  EXPECT_EQ(line.find("posix/"), std::string::npos) << line;
}

class UcxThreadsTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    // UCX starts its async thread with the first worker and may keep it; count from after a first round.
    runRanks(GroupSpec::of(2), [](RankContext&) {});
    baseline_ = testing::threadCount();
  }
  int baseline_ = 0;
};

// With nothing outstanding, close() (or destruction without it) joins the progress threads and UCX stops
// whatever it started for the workers.
TEST_P(UcxThreadsTest, ShutdownLeavesNoThreads) {
  const bool close = GetParam();
  int during = 0;
  std::mutex mutex;
  GroupSpec spec = GroupSpec::of(3);
  spec.close_at_end = close;
  runRanks(spec, [&](RankContext& ctx) {
    ctx.sync.arrive_and_wait();
    std::lock_guard<std::mutex> lock(mutex);
    during = std::max(during, testing::threadCount());
  });
  // 3 rank threads and 3 progress threads were alive.
  EXPECT_GE(during, baseline_ + 6);
  EXPECT_EQ(testing::threadCount(), baseline_);
}

INSTANTIATE_TEST_SUITE_P(CloseOrDestroy, UcxThreadsTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Close" : "DestroyOnly"; });

}  // namespace
}  // namespace psdp::transport::ucx
