// Task queues and their driver over real UCX transports, ranks as threads of this process: queue order,
// waits with their own timeout, the communicator timeout naming the operation, refusal after a failure, and
// teams sharing one transport and one driver, where a failure of one team leaves the others alone. Each
// driver drives a transport made in caller mode, as a context makes them.
#include "coll/task_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "coll/host_collectives.h"
#include "coll/progress_driver.h"
#include "transport/team_transport.h"
#include "unit/coll/ucx_world.h"

namespace psdp::coll {
namespace {

using coll::test::UcxWorld;

struct RankEngine {
  std::unique_ptr<ProgressDriver> driver;
  std::unique_ptr<coll::Collectives> coll;
  std::unique_ptr<TaskQueue> engine;
};

RankEngine makeRank(UcxWorld& world, int rank, bool background, double timeout_s, size_t max_in_flight = 64,
                    bool single_host = false) {
  coll::CollParams params{rank, world.size(), 1024, 300, nullptr};
  params.single_host = single_host;
  auto created = coll::createHostCollectives(world.transport(rank), params);
  EXPECT_TRUE(created.isOk()) << created.status().toString();
  RankEngine r;
  r.coll = std::move(created).value();
  r.driver = std::make_unique<ProgressDriver>(world.transport(rank), background, nullptr);
  r.engine = std::make_unique<TaskQueue>(*r.driver, world.transport(rank), timeout_s, max_in_flight, nullptr);
  return r;
}

std::shared_ptr<Request> post(RankEngine& r, Result<std::unique_ptr<coll::CollTask>> task) {
  EXPECT_TRUE(task.isOk()) << task.status().toString();
  auto posted = r.engine->post(std::move(task).value());
  EXPECT_TRUE(posted.isOk()) << posted.status().toString();
  return posted.isOk() ? posted.value() : nullptr;
}

class TaskQueueTest : public ::testing::TestWithParam<bool> {};

// Three collectives outstanding, waited for in reverse; then a wait that must time out because the peer
// posts only after it has.
TEST_P(TaskQueueTest, QueueOrderAndWaitTimeout) {
  const bool background = GetParam();
  auto world = UcxWorld::create(3, PSDP_PROGRESS_CALLER);
  ASSERT_TRUE(world.isOk()) << world.status().toString();
  std::atomic<bool> rank0_timed_out{false};
  world.value()->runRanks([&](int rank) {
    RankEngine r = makeRank(*world.value(), rank, background, 60);
    std::vector<int32_t> a(5000, rank + 1), b(3 * 1000), c(7, rank == 2 ? 42 : 0);
    std::vector<int32_t> own(1000, rank * 10);
    std::shared_ptr<Request> reqs[3] = {
        post(r, r.coll->postAllReduce(a.data(), a.data(), a.size(), PSDP_INT32, PSDP_SUM)),
        post(r, r.coll->postAllGather(own.data(), b.data(), own.size(), PSDP_INT32)),
        post(r, r.coll->postBroadcast(c.data(), c.data(), c.size(), PSDP_INT32, 2))};
    for (int k = 2; k >= 0; --k) {
      ASSERT_EQ(r.engine->wait(*reqs[k], Deadline::after(60)), WaitResult::kDone);
      EXPECT_TRUE(reqs[k]->status().isOk()) << reqs[k]->status().toString();
    }
    for (int32_t x : a) ASSERT_EQ(x, 6);
    for (size_t i = 0; i < b.size(); ++i) ASSERT_EQ(b[i], static_cast<int32_t>(i / 1000) * 10);
    for (int32_t x : c) ASSERT_EQ(x, 42);

    // Rank 0 posts first and sees its wait give up; the others post only after that.
    std::shared_ptr<Request> late;
    if (rank == 0) {
      late = post(r, r.coll->postBarrier());
      EXPECT_EQ(r.engine->wait(*late, Deadline::after(0.2)), WaitResult::kTimedOut);
      EXPECT_FALSE(r.engine->test(*late));
      rank0_timed_out.store(true);
    } else {
      while (!rank0_timed_out.load()) std::this_thread::yield();
      late = post(r, r.coll->postBarrier());
    }
    ASSERT_EQ(r.engine->wait(*late, Deadline::after(60)), WaitResult::kDone);
    EXPECT_TRUE(late->status().isOk()) << late->status().toString();
    EXPECT_TRUE(r.engine->failure().isOk());
  });
  EXPECT_TRUE(world.value()->close().isOk());
}

// Back-pressure: with at most 2 in flight, the third post waits until the first has completed, and every one
// of 20 posted back to back completes exactly.
TEST_P(TaskQueueTest, PostBeyondTheBoundWaitsForTheOldest) {
  const bool background = GetParam();
  auto world = UcxWorld::create(2, PSDP_PROGRESS_CALLER);
  ASSERT_TRUE(world.isOk()) << world.status().toString();
  world.value()->runRanks([&](int rank) {
    RankEngine r = makeRank(*world.value(), rank, background, 60, /*max_in_flight=*/2);
    constexpr int kOps = 20;
    std::vector<std::vector<int32_t>> data(kOps, std::vector<int32_t>(3000));
    std::vector<std::shared_ptr<Request>> reqs;
    for (int k = 0; k < kOps; ++k) {
      for (size_t i = 0; i < data[k].size(); ++i) data[k][i] = static_cast<int32_t>(rank * 1000 + k + i % 7);
      reqs.push_back(
          post(r, r.coll->postAllReduce(data[k].data(), data[k].data(), data[k].size(), PSDP_INT32, PSDP_SUM)));
      ASSERT_NE(reqs.back(), nullptr);
      // Posting returned: at most two are incomplete, so the one posted two before is done.
      if (k >= 2) {
        EXPECT_TRUE(reqs[k - 2]->isDone()) << "op " << k - 2 << " still running after op " << k << " was posted";
      }
    }
    for (int k = kOps - 1; k >= 0; --k) {
      ASSERT_EQ(r.engine->wait(*reqs[k], Deadline::after(60)), WaitResult::kDone);
      ASSERT_TRUE(reqs[k]->status().isOk()) << reqs[k]->status().toString();
      for (size_t i = 0; i < data[k].size(); ++i) {
        ASSERT_EQ(data[k][i], static_cast<int32_t>(1000 + 2 * (k + i % 7))) << "op " << k << " element " << i;
      }
    }
  });
  EXPECT_TRUE(world.value()->close().isOk());
}

// One large reduction does not hold up the operations behind it: the direct path reduces in slices, and the
// driver gives the others a turn between them. A small all-reduce posted after a 512 MiB direct one (ranks
// are threads of one process, so every buffer is addressable) completes while the large one is still
// running; reducing the large one's 256 MiB share in one go, the small one would wait for all of it (at 128 MiB
// the large one finished first in 1 of 13 runs on a 2-core VM, before the small one's few rounds had had their
// turns).
TEST_P(TaskQueueTest, SmallOperationOvertakesALargeDirectOne) {
  const bool background = GetParam();
  auto world = UcxWorld::create(2, PSDP_PROGRESS_CALLER);
  ASSERT_TRUE(world.isOk()) << world.status().toString();
  world.value()->runRanks([&](int rank) {
    RankEngine r = makeRank(*world.value(), rank, background, 120, 64, /*single_host=*/true);
    std::vector<int32_t> large(size_t{128} << 20, rank + 1), small(4, rank + 10);
    std::shared_ptr<Request> big =
        post(r, r.coll->postAllReduce(large.data(), large.data(), large.size(), PSDP_INT32, PSDP_SUM));
    std::shared_ptr<Request> quick =
        post(r, r.coll->postAllReduce(small.data(), small.data(), small.size(), PSDP_INT32, PSDP_SUM));
    ASSERT_EQ(r.engine->wait(*quick, Deadline::after(120)), WaitResult::kDone);
    EXPECT_TRUE(quick->status().isOk()) << quick->status().toString();
    EXPECT_FALSE(big->isDone()) << "the large all-reduce finished before the small one posted after it";
    ASSERT_EQ(r.engine->wait(*big, Deadline::after(120)), WaitResult::kDone);
    ASSERT_TRUE(big->status().isOk()) << big->status().toString();
    for (int32_t x : small) ASSERT_EQ(x, 21);
    for (size_t i = 0; i < large.size(); i += 4099) ASSERT_EQ(large[i], 3) << "element " << i;
    ASSERT_EQ(large.back(), 3);
  });
  EXPECT_TRUE(world.value()->close().isOk());
}

// A peer that never posts: the operation times out by the engine's timeout with a message naming it, the
// one posted after it fails too, and later posts are refused.
TEST_P(TaskQueueTest, TimeoutFailsTheEngine) {
  const bool background = GetParam();
  auto world = UcxWorld::create(2, PSDP_PROGRESS_CALLER);
  ASSERT_TRUE(world.isOk()) << world.status().toString();
  RankEngine r = makeRank(*world.value(), 0, background, 0.3);
  std::vector<int32_t> a(100, 1);
  std::shared_ptr<Request> first = post(r, r.coll->postAllReduce(a.data(), a.data(), a.size(), PSDP_INT32, PSDP_SUM));
  // Made now, posted to the engine after the failure: the engine itself must refuse it.
  auto spare = r.coll->postBarrier();
  ASSERT_TRUE(spare.isOk());
  std::shared_ptr<Request> second = post(r, r.coll->postBarrier());
  ASSERT_EQ(r.engine->wait(*second, Deadline::after(30)), WaitResult::kDone);
  ASSERT_TRUE(first->isDone());
  EXPECT_EQ(first->status().code(), PSDP_ERR_TIMEOUT);
  EXPECT_NE(first->status().message().find("all-reduce #0 (count 100"), std::string::npos) << first->status().message();
  EXPECT_NE(first->status().message().find("peer 1"), std::string::npos) << first->status().message();
  EXPECT_EQ(second->status().code(), PSDP_ERR_TIMEOUT);
  // It ran alongside the first (in flight), or waited for a task slot (not started): either way it says why.
  EXPECT_NE(second->status().message().find("operation failed"), std::string::npos) << second->status().message();
  EXPECT_EQ(r.engine->failure().code(), PSDP_ERR_TIMEOUT);
  auto refused = r.engine->post(std::move(spare).value());
  EXPECT_EQ(refused.status().code(), PSDP_ERR_TIMEOUT) << refused.status().toString();
  EXPECT_FALSE(r.coll->postBarrier().isOk());
  // The transports are aborted, not closed: rank 1 never took part.
  r.engine.reset();
  r.driver.reset();
  world.value()->destroyTransport(0);
  world.value()->destroyTransport(1);
}

// Four user threads per rank wait at once for 24 collectives of one queue, each its share in reverse
// order, while the driver's thread (if any) and the transport's progress thread (with the thread) hand the
// drive between them and the waiters: every request completes, exactly.
TEST_P(TaskQueueTest, ManyWaitersShareTheDrive) {
  const bool background = GetParam();
  auto world = UcxWorld::create(3, background ? PSDP_PROGRESS_THREAD : PSDP_PROGRESS_CALLER);
  ASSERT_TRUE(world.isOk()) << world.status().toString();
  world.value()->runRanks([&](int rank) {
    RankEngine r = makeRank(*world.value(), rank, background, 60);
    constexpr int kOps = 24, kWaiters = 4;
    std::vector<std::vector<int32_t>> data(kOps);
    std::vector<std::shared_ptr<Request>> reqs(kOps);
    for (int k = 0; k < kOps; ++k) {
      data[k].assign(static_cast<size_t>(k + 1) * 1000, rank + 1 + k);
      reqs[k] = post(r, r.coll->postAllReduce(data[k].data(), data[k].data(), data[k].size(), PSDP_INT32, PSDP_SUM));
    }
    std::vector<std::thread> waiters;
    for (int t = 0; t < kWaiters; ++t) {
      waiters.emplace_back([&, t] {
        for (int k = kOps - kWaiters + t; k >= 0; k -= kWaiters) {
          EXPECT_EQ(r.engine->wait(*reqs[k], Deadline::after(60)), WaitResult::kDone) << "request " << k;
        }
      });
    }
    for (std::thread& w : waiters) w.join();
    for (int k = 0; k < kOps; ++k) {
      ASSERT_TRUE(reqs[k]->isDone()) << "request " << k;
      EXPECT_TRUE(reqs[k]->status().isOk()) << reqs[k]->status().toString();
      for (int32_t x : data[k]) ASSERT_EQ(x, 6 + 3 * k) << "request " << k;
    }
  });
}

// The drive passes from a waiter that leaves to one that stays, whatever the order: on rank 0, thread A
// waits for all-reduce #0 and thread B for #1; rank 1 posts #1 only after A has returned from its wait and
// gone (it never calls into psdp again), so #1 completes on rank 0 only if the drive reached B after A left
// (with the background thread: A's and B's waits first keep it aside, then B or the thread drives).
// 20 rounds, each with a fresh pair of requests. A waiter that is not woken still looks again every 2 ms
// (kHandOverSeconds), so this proves that the waiter left behind drives to completion, not how promptly.
TEST_P(TaskQueueTest, TheDrivePassesToTheWaiterLeft) {
  const bool background = GetParam();
  auto world = UcxWorld::create(2, background ? PSDP_PROGRESS_THREAD : PSDP_PROGRESS_CALLER);
  ASSERT_TRUE(world.isOk()) << world.status().toString();
  constexpr int kRounds = 20;
  std::atomic<int> a_left{0}, b_waiting{0};
  world.value()->runRanks([&](int rank) {
    RankEngine r = makeRank(*world.value(), rank, background, 60);
    for (int round = 0; round < kRounds; ++round) {
      std::vector<int32_t> x(4096, rank + 1), y(65536, rank + 1);
      if (rank == 0) {
        auto first = post(r, r.coll->postAllReduce(x.data(), x.data(), x.size(), PSDP_INT32, PSDP_SUM));
        auto second = post(r, r.coll->postAllReduce(y.data(), y.data(), y.size(), PSDP_INT32, PSDP_SUM));
        std::thread a([&] {
          EXPECT_EQ(r.engine->wait(*first, Deadline::after(30)), WaitResult::kDone) << "round " << round;
          a_left.store(round + 1);
        });
        std::thread b([&] {
          b_waiting.store(round + 1);
          EXPECT_EQ(r.engine->wait(*second, Deadline::after(30)), WaitResult::kDone)
              << "round " << round << ": the waiter left behind never got the drive";
        });
        a.join();
        b.join();
        ASSERT_TRUE(first->status().isOk() && second->status().isOk()) << second->status().toString();
        for (int32_t v : x) ASSERT_EQ(v, 3);
        for (int32_t v : y) ASSERT_EQ(v, 3);
      } else {
        // #0 once rank 0's B waits too (so that A and B overlap), #1 once A is gone.
        while (b_waiting.load() != round + 1) std::this_thread::yield();
        auto first = post(r, r.coll->postAllReduce(x.data(), x.data(), x.size(), PSDP_INT32, PSDP_SUM));
        ASSERT_EQ(r.engine->wait(*first, Deadline::after(30)), WaitResult::kDone);
        while (a_left.load() != round + 1) std::this_thread::yield();
        auto second = post(r, r.coll->postAllReduce(y.data(), y.data(), y.size(), PSDP_INT32, PSDP_SUM));
        ASSERT_EQ(r.engine->wait(*second, Deadline::after(30)), WaitResult::kDone);
        ASSERT_TRUE(first->status().isOk() && second->status().isOk()) << second->status().toString();
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Progress, TaskQueueTest, ::testing::Bool(), [](const ::testing::TestParamInfo<bool>& info) {
  return info.param ? std::string("Thread") : std::string("Caller");
});

// Two teams of two ranks, {0, 1} and {2, 3}, and the world team of all four, all on one transport and one
// driver per rank (a context). The world and a pair run collectives at once from one thread; then rank 0
// aborts its pair: rank 1's pair fails naming rank 0's abort, while the world (ranks 0 and 1 included) and
// the other pair go on exactly.
TEST_P(TaskQueueTest, TeamsShareADriverAndFailAlone) {
  const bool background = GetParam();
  auto world = UcxWorld::create(4, PSDP_PROGRESS_CALLER);
  ASSERT_TRUE(world.isOk()) << world.status().toString();
  world.value()->runRanks([&](int rank) {
    transport::Transport& shared = world.value()->transport(rank);
    ProgressDriver driver(shared, background, nullptr);
    const int pair = rank / 2;
    const auto pair_context = static_cast<transport::ContextId>(1 + pair);
    transport::TeamTransport whole(shared, 0, {0, 1, 2, 3}, rank);
    transport::TeamTransport halves(shared, pair_context, {2 * pair, 2 * pair + 1}, rank % 2);
    CollParams world_params{rank, 4, 1024, 0, nullptr};
    CollParams pair_params{rank % 2, 2, 1024, pair_context, nullptr};
    auto world_coll = createHostCollectives(whole, world_params);
    auto pair_coll = createHostCollectives(halves, pair_params);
    ASSERT_TRUE(world_coll.isOk() && pair_coll.isOk());
    {
      TaskQueue world_queue(driver, whole, 60, 64, nullptr);
      TaskQueue pair_queue(driver, halves, 60, 64, nullptr);
      auto postOn = [](TaskQueue& queue, Result<std::unique_ptr<CollTask>> task) {
        EXPECT_TRUE(task.isOk()) << task.status().toString();
        auto posted = queue.post(std::move(task).value());
        EXPECT_TRUE(posted.isOk()) << posted.status().toString();
        return posted.isOk() ? posted.value() : nullptr;
      };
      std::vector<int32_t> w(100000, rank + 1), p(50000, rank + 1);
      auto on_world =
          postOn(world_queue, world_coll.value()->postAllReduce(w.data(), w.data(), w.size(), PSDP_INT32, PSDP_SUM));
      auto on_pair =
          postOn(pair_queue, pair_coll.value()->postAllReduce(p.data(), p.data(), p.size(), PSDP_INT32, PSDP_SUM));
      ASSERT_EQ(pair_queue.wait(*on_pair, Deadline::after(60)), WaitResult::kDone);
      ASSERT_EQ(world_queue.wait(*on_world, Deadline::after(60)), WaitResult::kDone);
      ASSERT_TRUE(on_pair->status().isOk() && on_world->status().isOk()) << on_pair->status().toString();
      for (int32_t x : w) ASSERT_EQ(x, 10);
      for (int32_t x : p) ASSERT_EQ(x, pair == 0 ? 3 : 7);

      // Rank 0 aborts its pair; rank 1 learns it from the notice while its own all-reduce there waits.
      if (rank == 0) {
        pair_queue.abort(Status::aborted("rank 0 aborted its pair"));
      } else if (rank == 1) {
        // Refused at once if the notice came first, else failed in flight: a remote error naming rank 0's reason.
        auto task = pair_coll.value()->postAllReduce(p.data(), p.data(), p.size(), PSDP_INT32, PSDP_SUM);
        Status failed = task.status();
        if (task.isOk()) {
          auto posted = pair_queue.post(std::move(task).value());
          failed = posted.status();
          if (posted.isOk()) {
            ASSERT_EQ(pair_queue.wait(*posted.value(), Deadline::after(30)), WaitResult::kDone);
            failed = posted.value()->status();
          }
        }
        EXPECT_EQ(failed.code(), PSDP_ERR_REMOTE) << failed.toString();
        EXPECT_NE(failed.message().find("peer 0 reported: rank 0 aborted its pair"), std::string::npos)
            << failed.message();
      } else {
        auto again =
            postOn(pair_queue, pair_coll.value()->postAllReduce(p.data(), p.data(), p.size(), PSDP_INT32, PSDP_SUM));
        ASSERT_EQ(pair_queue.wait(*again, Deadline::after(60)), WaitResult::kDone);
        ASSERT_TRUE(again->status().isOk()) << again->status().toString();
        for (int32_t x : p) ASSERT_EQ(x, 14);
      }
      EXPECT_EQ(pair_queue.failure().isOk(), pair == 1);
      std::fill(w.begin(), w.end(), rank + 1);
      auto after =
          postOn(world_queue, world_coll.value()->postAllReduce(w.data(), w.data(), w.size(), PSDP_INT32, PSDP_SUM));
      ASSERT_EQ(world_queue.wait(*after, Deadline::after(60)), WaitResult::kDone);
      ASSERT_TRUE(after->status().isOk()) << after->status().toString();
      for (int32_t x : w) ASSERT_EQ(x, 10);
      EXPECT_TRUE(shared.failure().isOk()) << shared.failure().toString();
    }
  });
  EXPECT_TRUE(world.value()->close().isOk());
}

}  // namespace
}  // namespace psdp::coll
