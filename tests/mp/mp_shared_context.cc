// The teams of a layout on the world's context (PSDP_SPLIT_SHARE, the default), through the public API:
//   - the world and both layout teams (psdp_comm_split_layout) run on as many threads as the world alone,
//     while teams split with split_share = 0 add threads of their own (so the count sees them);
//   - from one thread, 48 nonblocking collectives of mixed kinds alternate between the shard team, the
//     replica team and the world, and are waited for in each rank's own order: every result exact;
//   - rank 0 aborts its shard team: the other members' next call there fails with PSDP_ERR_REMOTE naming
//     rank 0's rank in that team, at once, while the replica teams, the other shard teams and the world go
//     on exactly.
#include <dirent.h>
#include <psdp/psdp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "mp_report.h"

using psdp::mp::why;

namespace {

constexpr int kOps = 48;
constexpr double kMaxSecondsToError = 2.0;

int threads() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (readdir(d) != nullptr) ++n;
    closedir(d);
  }
  return n - 2;  // "." and ".."
}

struct Teams {
  psdp_comm_h shard = nullptr;
  psdp_comm_h replica = nullptr;
};

Teams splitLayout(psdp_comm_h world, int group, const psdp_config_t* config, psdp::mp::Report& report,
                  const std::string& what) {
  Teams teams;
  psdp_status_t s = psdp_comm_split_layout(world, group, config, &teams.shard, &teams.replica);
  report.check(s == PSDP_SUCCESS, what + ": split_layout: " + why(world, s));
  return teams;
}

int sizeOf(psdp_comm_h comm) {
  int n = 0;
  psdp_comm_size(comm, &n);
  return n;
}

// One nonblocking collective and what its output must hold once complete. Data are small integers of the
// world rank, so every sum is exact; `ranks` is the team's world ranks in team order (all-gathered first).
struct Op {
  psdp_comm_h comm = nullptr;
  std::string name;
  std::vector<int32_t> in, out, expect;
  psdp_request_h request = nullptr;
};

Op makeOp(int k, psdp_comm_h comm, const std::vector<int>& ranks, int world_rank) {
  Op op;
  op.comm = comm;
  const size_t n = ranks.size();
  const size_t count = 1000 + 37 * static_cast<size_t>(k);
  auto value = [&](int r, size_t i) { return static_cast<int32_t>(r + 1 + static_cast<int>(i % 5)); };
  auto sum = [&](size_t i) {
    int32_t s = 0;
    for (int r : ranks) s += value(r, i);
    return s;
  };
  const int me = static_cast<int>(std::find(ranks.begin(), ranks.end(), world_rank) - ranks.begin());
  switch (k % 3) {
    case 0:  // all-reduce
      op.name = "all-reduce";
      for (size_t i = 0; i < count; ++i) op.in.push_back(value(world_rank, i)), op.expect.push_back(sum(i));
      op.out.resize(count);
      break;
    case 1:  // reduce-scatter: block b of the input is summed into rank b's output
      op.name = "reduce-scatter";
      for (size_t i = 0; i < count * n; ++i) op.in.push_back(value(world_rank, i));
      for (size_t i = 0; i < count; ++i) op.expect.push_back(sum(static_cast<size_t>(me) * count + i));
      op.out.resize(count);
      break;
    default:  // all-gather
      op.name = "all-gather";
      for (size_t i = 0; i < count; ++i) op.in.push_back(value(world_rank, i));
      for (int r : ranks) {
        for (size_t i = 0; i < count; ++i) op.expect.push_back(value(r, i));
      }
      op.out.resize(count * n);
      break;
  }
  return op;
}

psdp_status_t post(Op& op, int k) {
  switch (k % 3) {
    case 0:
      return psdp_all_reduce(op.in.data(), op.out.data(), op.out.size(), PSDP_INT32, PSDP_SUM, op.comm, nullptr,
                             &op.request);
    case 1:
      return psdp_reduce_scatter(op.in.data(), op.out.data(), op.out.size(), PSDP_INT32, PSDP_SUM, op.comm, nullptr,
                                 &op.request);
    default:
      return psdp_all_gather(op.in.data(), op.out.data(), op.in.size(), PSDP_INT32, op.comm, nullptr, &op.request);
  }
}

std::vector<int> worldRanksOf(psdp_comm_h comm, int world_rank, psdp::mp::Report& report) {
  std::vector<int> ranks(static_cast<size_t>(sizeOf(comm)));
  psdp_status_t s = psdp_all_gather(&world_rank, ranks.data(), 1, PSDP_INT32, comm, nullptr, nullptr);
  report.check(s == PSDP_SUCCESS, "all-gather the world ranks: " + why(comm, s));
  return ranks;
}

void interleaved(psdp_comm_h world, const Teams& teams, int rank, psdp::mp::Report& report) {
  const psdp_comm_h comms[3] = {teams.shard, teams.replica, world};
  std::vector<int> ranks[3];
  for (int c = 0; c < 3; ++c) ranks[c] = worldRanksOf(comms[c], rank, report);
  std::vector<Op> ops;
  ops.reserve(kOps);
  for (int k = 0; k < kOps; ++k) {
    // Team by k, kind by k / 3: every team gets every kind.
    ops.push_back(makeOp(k / 3, comms[k % 3], ranks[k % 3], rank));
    psdp_status_t s = post(ops.back(), k / 3);
    report.check(s == PSDP_SUCCESS, "post " + std::to_string(k) + ": " + why(comms[k % 3], s));
  }
  std::vector<int> order(kOps);
  for (int k = 0; k < kOps; ++k) order[static_cast<size_t>(k)] = k;
  std::shuffle(order.begin(), order.end(), std::mt19937(static_cast<unsigned>(rank) * 7919u + 1));
  for (int k : order) {
    Op& op = ops[static_cast<size_t>(k)];
    if (op.request == nullptr) continue;
    psdp_status_t s = psdp_request_wait(op.request);
    report.check(s == PSDP_SUCCESS, "wait " + std::to_string(k) + " (" + op.name + "): " + why(op.comm, s));
    report.check(op.out == op.expect, "op " + std::to_string(k) + " (" + op.name + ") exact");
    psdp_request_free(op.request);
  }
}

bool allReduceExact(psdp_comm_h comm, int rank, psdp::mp::Report& report, const std::string& what) {
  std::vector<int> ranks = worldRanksOf(comm, rank, report);
  std::vector<int32_t> data(4096, rank + 1);
  psdp_status_t s =
      psdp_all_reduce(data.data(), data.data(), data.size(), PSDP_INT32, PSDP_SUM, comm, nullptr, nullptr);
  int32_t expect = 0;
  for (int r : ranks) expect += r + 1;
  bool ok = s == PSDP_SUCCESS && std::all_of(data.begin(), data.end(), [&](int32_t x) { return x == expect; });
  report.check(ok, what + ": exact all-reduce: " + why(comm, s));
  return ok;
}

// Rank 0 aborts its shard team; the world tells every rank when it has (a barrier).
void abortOneTeam(psdp_comm_h world, const Teams& teams, int rank, psdp::mp::Report& report) {
  const int rank0_in_shard = [&] {
    std::vector<int> ranks = worldRanksOf(teams.shard, rank, report);
    auto it = std::find(ranks.begin(), ranks.end(), 0);
    return it == ranks.end() ? -1 : static_cast<int>(it - ranks.begin());
  }();
  if (rank == 0) {
    report.check(psdp_comm_abort(teams.shard) == PSDP_SUCCESS, "abort the shard team");
  }
  psdp_status_t s = psdp_barrier(world, nullptr);
  report.check(s == PSDP_SUCCESS, "world barrier after the abort: " + why(world, s));
  if (rank0_in_shard >= 0 && rank != 0) {
    std::vector<int32_t> data(64, 1);
    auto start = std::chrono::steady_clock::now();
    s = psdp_all_reduce(data.data(), data.data(), data.size(), PSDP_INT32, PSDP_SUM, teams.shard, nullptr, nullptr);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::string error = psdp_get_last_error(teams.shard);
    const std::string named = "peer " + std::to_string(rank0_in_shard);
    report.check(s == PSDP_ERR_REMOTE && error.find(named) != std::string::npos,
                 "the aborted shard team fails naming rank 0 as " + named + ": " + why(teams.shard, s));
    report.check(seconds < kMaxSecondsToError, "the aborted team's error came at once: " + std::to_string(seconds));
  } else if (rank0_in_shard < 0) {
    allReduceExact(teams.shard, rank, report, "a shard team without rank 0 after the abort");
  }
  allReduceExact(teams.replica, rank, report, "the replica team after the abort");
  allReduceExact(world, rank, report, "the world after the abort");
}

}  // namespace

int main() {
  psdp::mp::Report report;
  int rank = 0, nranks = 1;
  psdp_comm_h world = psdp::mp::initFromEnv(report, &rank, &nranks);
  if (world == nullptr) return 1;
  const int group = 2;
  if (nranks < 4 || nranks % group != 0) {
    std::fprintf(stderr, "mp_shared_context runs on an even number of ranks, at least 4\n");
    return 2;
  }
  allReduceExact(world, rank, report, "the world alone");
  const int alone = threads();

  Teams teams = splitLayout(world, group, nullptr, report, "shared");
  if (teams.shard == nullptr || teams.replica == nullptr) return report.finish();
  const int with_teams = threads();
  report.check(with_teams == alone, "the world and both layout teams run on " + std::to_string(with_teams) +
                                        " threads, the world alone on " + std::to_string(alone));

  // split_share = 0: the same teams with their own transports and threads, used and destroyed.
  psdp_config_t own = PSDP_CONFIG_INITIALIZER;
  own.split_share = 0;
  Teams separate = splitLayout(world, group, &own, report, "separate");
  const char* progress = std::getenv("PSDP_PROGRESS");
  if (progress != nullptr && std::string(progress) == "caller") {
    // Callers drive: no context has a thread of its own to count.
    if (rank == 0) std::printf("split_share = 0 thread check skipped: PSDP_PROGRESS=caller makes no threads\n");
  } else {
    report.check(threads() > alone, "teams split with split_share = 0 have threads of their own: " +
                                        std::to_string(threads()) + " threads");
  }
  if (separate.shard && separate.replica) {
    allReduceExact(separate.shard, rank, report, "a separate shard team");
    allReduceExact(separate.replica, rank, report, "a separate replica team");
    report.check(psdp_comm_finalize(separate.shard) == PSDP_SUCCESS, "finalize a separate shard team");
    report.check(psdp_comm_finalize(separate.replica) == PSDP_SUCCESS, "finalize a separate replica team");
  }
  psdp_comm_destroy(separate.shard);
  psdp_comm_destroy(separate.replica);

  interleaved(world, teams, rank, report);
  abortOneTeam(world, teams, rank, report);

  // The aborted shard team cannot finalize (its members were told); the replica team and the world do.
  report.check(psdp_comm_finalize(teams.replica) == PSDP_SUCCESS, "finalize the replica team");
  psdp_comm_destroy(teams.shard);
  psdp_comm_destroy(teams.replica);
  psdp_status_t s = psdp_comm_finalize(world);
  report.check(s == PSDP_SUCCESS, "finalize the world: " + why(world, s));
  psdp_comm_destroy(world);
  return report.finish();
}
