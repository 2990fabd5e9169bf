// Gates (TaskQueue::postAfter, psdp_comm_after): the requests behind a gate start once what it waits for has
// completed, and its failure, or a wait past the timeout, fails the gated queue naming the cause. Two queues
// share one driver over real UCX transports, ranks as threads of this process.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "coll/host_collectives.h"
#include "coll/progress_driver.h"
#include "coll/task_queue.h"
#include "transport/team_transport.h"
#include "unit/coll/ucx_world.h"

namespace psdp::coll {
namespace {

using coll::test::UcxWorld;

// One rank's two teams (all ranks in both) on one driver.
struct TwoTeams {
  TwoTeams(transport::Transport& shared, int rank, int nranks, double timeout_a, double timeout_b)
      : driver(shared, /*background=*/true, nullptr),
        a_view(shared, 1, everyone(nranks), rank),
        b_view(shared, 2, everyone(nranks), rank),
        a(createHostCollectives(a_view, CollParams{rank, nranks, 1024, 1, nullptr}).value()),
        b(createHostCollectives(b_view, CollParams{rank, nranks, 1024, 2, nullptr}).value()),
        a_queue(driver, a_view, timeout_a, 64, nullptr),
        b_queue(driver, b_view, timeout_b, 64, nullptr) {}

  static std::vector<int> everyone(int nranks) {
    std::vector<int> ranks;
    for (int r = 0; r < nranks; ++r) ranks.push_back(r);
    return ranks;
  }

  ProgressDriver driver;
  transport::TeamTransport a_view, b_view;
  std::unique_ptr<Collectives> a, b;
  TaskQueue a_queue, b_queue;
};

std::shared_ptr<Request> post(TaskQueue& queue, Result<std::unique_ptr<CollTask>> task) {
  EXPECT_TRUE(task.isOk()) << task.status().toString();
  auto posted = queue.post(std::move(task).value());
  EXPECT_TRUE(posted.isOk()) << posted.status().toString();
  return posted.isOk() ? posted.value() : nullptr;
}

// Team A's all-reduce is gated on team B's, which waits for rank 1 to post it; rank 1 posts only once rank 0
// has seen the gated all-reduce held back. Then both complete, exactly.
TEST(TaskQueueGateTest, HoldsBackUntilTheAwaitedCompletes) {
  auto world = UcxWorld::create(2, PSDP_PROGRESS_CALLER);
  ASSERT_TRUE(world.isOk()) << world.status().toString();
  std::atomic<bool> held{false};
  world.value()->runRanks([&](int rank) {
    TwoTeams t(world.value()->transport(rank), rank, 2, 60, 60);
    std::vector<int32_t> first(1000, rank + 1), second(1000, 10 * (rank + 1));
    std::shared_ptr<Request> on_b, on_a;
    if (rank == 0) {
      on_b = post(t.b_queue, t.b->postAllReduce(first.data(), first.data(), first.size(), PSDP_INT32, PSDP_SUM));
      ASSERT_TRUE(t.a_queue.postAfter(on_b).isOk());
      on_a = post(t.a_queue, t.a->postAllReduce(second.data(), second.data(), second.size(), PSDP_INT32, PSDP_SUM));
      EXPECT_EQ(t.a_queue.wait(*on_a, Deadline::after(0.2)), WaitResult::kTimedOut);
      EXPECT_FALSE(on_b->isDone());
      held.store(true);
    } else {
      // Team A first on this rank: rank 0's gated all-reduce is the only thing that can hold it back.
      on_a = post(t.a_queue, t.a->postAllReduce(second.data(), second.data(), second.size(), PSDP_INT32, PSDP_SUM));
      while (!held.load()) std::this_thread::yield();
      on_b = post(t.b_queue, t.b->postAllReduce(first.data(), first.data(), first.size(), PSDP_INT32, PSDP_SUM));
    }
    ASSERT_EQ(t.a_queue.wait(*on_a, Deadline::after(60)), WaitResult::kDone);
    ASSERT_EQ(t.b_queue.wait(*on_b, Deadline::after(60)), WaitResult::kDone);
    EXPECT_TRUE(on_a->status().isOk() && on_b->status().isOk()) << on_a->status().toString();
    for (int32_t x : first) ASSERT_EQ(x, 3);
    for (int32_t x : second) ASSERT_EQ(x, 30);
  });
  EXPECT_TRUE(world.value()->close().isOk());
}

// The chain of a chunk: reduce-scatter on team A, then (gate) the all-reduce of its output on team B, then
// (gate) a hook on team A, then the all-gather of the result on team A; posted back to back, waited for once.
// The hook runs after the all-reduce has completed and before the all-gather reads its input.
TEST(TaskQueueGateTest, AChainEndsInAHook) {
  auto world = UcxWorld::create(2, PSDP_PROGRESS_CALLER);
  ASSERT_TRUE(world.isOk()) << world.status().toString();
  world.value()->runRanks([&](int rank) {
    TwoTeams t(world.value()->transport(rank), rank, 2, 60, 60);
    constexpr size_t kPiece = 5000;
    std::vector<int32_t> grads(2 * kPiece), piece(kPiece), params(2 * kPiece);
    for (size_t i = 0; i < grads.size(); ++i) grads[i] = static_cast<int32_t>(rank + 1 + i % 3);
    struct Seen {
      std::shared_ptr<Request> ar;
      int32_t* piece;
      bool ar_done = false;
      int32_t first = 0;
    } seen;
    auto rs = post(t.a_queue, t.a->postReduceScatter(grads.data(), piece.data(), kPiece, PSDP_INT32, PSDP_SUM));
    ASSERT_TRUE(t.b_queue.postAfter(rs).isOk());
    seen.ar = post(t.b_queue, t.b->postAllReduce(piece.data(), piece.data(), kPiece, PSDP_INT32, PSDP_SUM));
    seen.piece = piece.data();
    ASSERT_TRUE(t.a_queue.postAfter(seen.ar).isOk());
    auto hook = t.a_queue.postHook(
        [](void* arg) {
          auto* s = static_cast<Seen*>(arg);
          s->ar_done = s->ar->isDone();
          s->first = s->piece[0];
          s->piece[0] += 1000;  // the all-gather must carry what the hook wrote
        },
        &seen);
    ASSERT_TRUE(hook.isOk()) << hook.status().toString();
    auto ag = post(t.a_queue, t.a->postAllGather(piece.data(), params.data(), kPiece, PSDP_INT32));
    ASSERT_EQ(t.a_queue.wait(*ag, Deadline::after(60)), WaitResult::kDone);
    ASSERT_TRUE(ag->status().isOk()) << ag->status().toString();
    EXPECT_TRUE(hook.value()->isDone() && seen.ar_done);
    // Rank r's reduce-scatter output is block r of the summed gradients: element g of the whole vector sums
    // to 3 + 2 (g % 3). The all-reduce adds both ranks' blocks; the hook adds 1000 to element 0; the
    // all-gather puts the (equal) pieces side by side.
    auto reduced = [&](size_t i) { return static_cast<int32_t>(6 + 2 * (i % 3) + 2 * ((kPiece + i) % 3)); };
    for (int r = 0; r < 2; ++r) {
      for (size_t i = 0; i < kPiece; ++i) {
        int32_t expect = reduced(i) + (i == 0 ? 1000 : 0);
        ASSERT_EQ(params[static_cast<size_t>(r) * kPiece + i], expect) << "block " << r << " element " << i;
      }
    }
    EXPECT_EQ(seen.first, reduced(0));
  });
  EXPECT_TRUE(world.value()->close().isOk());
}

// Rank 0 of two alone (rank 1 never posts): an all-reduce on team B, a gate on team A after it, and a barrier
// behind the gate, waited for until it completes (it can only fail).
struct GatedAlone {
  std::unique_ptr<TwoTeams> teams;
  std::vector<int32_t> data = std::vector<int32_t>(100, 1);
  std::shared_ptr<Request> on_b, on_a;

  GatedAlone(UcxWorld& world, double timeout_a, double timeout_b)
      : teams(std::make_unique<TwoTeams>(world.transport(0), 0, 2, timeout_a, timeout_b)) {
    TwoTeams& t = *teams;
    on_b = post(t.b_queue, t.b->postAllReduce(data.data(), data.data(), data.size(), PSDP_INT32, PSDP_SUM));
    EXPECT_TRUE(t.a_queue.postAfter(on_b).isOk());
    on_a = post(t.a_queue, t.a->postBarrier());
    EXPECT_EQ(t.a_queue.wait(*on_a, Deadline::after(30)), WaitResult::kDone);
  }
};

// What a gate waits for fails (team B times out: rank 1 never posts there): team A's queue fails with that
// cause, and so does the barrier behind the gate.
TEST(TaskQueueGateTest, FailureOfTheAwaitedFailsTheGatedQueue) {
  auto world = UcxWorld::create(2, PSDP_PROGRESS_CALLER);
  ASSERT_TRUE(world.isOk()) << world.status().toString();
  GatedAlone g(*world.value(), /*timeout_a=*/60, /*timeout_b=*/0.3);
  EXPECT_EQ(g.on_b->status().code(), PSDP_ERR_TIMEOUT);
  EXPECT_EQ(g.on_a->status().code(), PSDP_ERR_TIMEOUT) << g.on_a->status().toString();
  EXPECT_NE(g.on_a->status().message().find("ordered after (psdp_comm_after) failed"), std::string::npos)
      << g.on_a->status().message();
  EXPECT_NE(g.on_a->status().message().find("all-reduce #0"), std::string::npos) << g.on_a->status().message();
  EXPECT_EQ(g.teams->a_queue.failure().code(), PSDP_ERR_TIMEOUT);
  // The queues and the driver go before the transports they use; rank 1 never took part.
  g.teams.reset();
  world.value()->destroyTransport(0);
  world.value()->destroyTransport(1);
}

// A gate waits at most its queue's timeout: team B's all-reduce may wait a minute, team A gives up after
// 0.3 s, naming the wait.
TEST(TaskQueueGateTest, AGateTimesOutOnItsOwnQueuesTimeout) {
  auto world = UcxWorld::create(2, PSDP_PROGRESS_CALLER);
  ASSERT_TRUE(world.isOk()) << world.status().toString();
  GatedAlone g(*world.value(), /*timeout_a=*/0.3, /*timeout_b=*/60);
  EXPECT_EQ(g.on_a->status().code(), PSDP_ERR_TIMEOUT) << g.on_a->status().toString();
  EXPECT_NE(g.on_a->status().message().find("waited 0.3 s for an operation"), std::string::npos)
      << g.on_a->status().message();
  EXPECT_FALSE(g.on_b->isDone());
  // Team B's all-reduce still has receives posted into its collectives' memory: failing the team completes
  // them before that memory goes.
  g.teams->b_queue.abort(Status::aborted("test over"));
  g.teams.reset();
  world.value()->destroyTransport(0);
  world.value()->destroyTransport(1);
}

}  // namespace
}  // namespace psdp::coll
