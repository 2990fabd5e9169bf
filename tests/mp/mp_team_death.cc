// A rank dies (SIGKILL) while 32 collectives are in flight on the world communicator. Every survivor must get
// PSDP_ERR_REMOTE from each of the 32, naming the dead rank, within a few seconds (PSDP_TIMEOUT is far
// longer). The shard and replica teams of the layout (psdp_comm_split_layout, G = world / 2) fail only where
// they contain the dead rank, naming it by its rank in that team; the others go on working (an exact
// all-reduce). Run through expect_rank_killed.sh, which launches it with `psdp-run --keep-going` and checks
// that exactly the victim was killed and every other rank passed.
//   mp_team_death VICTIM DIR
// DIR: an empty directory the ranks use to wait for each other outside psdp (mp_stages.h).
#include <psdp/psdp.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "mp_report.h"
#include "mp_stages.h"

using psdp::mp::Clock;
using psdp::mp::reachStage;
using psdp::mp::secondsSince;
using psdp::mp::why;

namespace {

// Well below the PSDP_TIMEOUT the test runs with: the errors must come from detecting the death.
constexpr double kMaxSecondsToError = 5.0;
constexpr int kInFlight = 32;
constexpr size_t kCount = size_t{64} << 10;

// One team of this rank: its communicator, and the dead rank's rank in it (-1: not a member).
struct Team {
  const char* name;
  psdp_comm_h comm;
  int victim_rank;
};

// An all-reduce on a team after the death: exact where the dead rank is not a member, else remote error
// naming it by its rank in the team, soon.
void checkTeam(const Team& team, int world_rank, psdp::mp::Report& report) {
  int size = 0;
  psdp_comm_size(team.comm, &size);
  std::vector<int32_t> data(1000, world_rank + 1);
  std::vector<int32_t> ranks(static_cast<size_t>(size));
  Clock::time_point start = Clock::now();
  psdp_status_t s = psdp_all_gather(&world_rank, ranks.data(), 1, PSDP_INT32, team.comm, nullptr, nullptr);
  if (team.victim_rank < 0) {
    report.check(s == PSDP_SUCCESS,
                 std::string(team.name) + " without the dead rank all-gathers: " + why(team.comm, s));
    s = psdp_all_reduce(data.data(), data.data(), data.size(), PSDP_INT32, PSDP_SUM, team.comm, nullptr, nullptr);
    report.check(s == PSDP_SUCCESS,
                 std::string(team.name) + " without the dead rank all-reduces: " + why(team.comm, s));
    int32_t expect = 0;
    for (int32_t r : ranks) expect += r + 1;
    report.check(std::all_of(data.begin(), data.end(), [&](int32_t x) { return x == expect; }),
                 std::string(team.name) + ": exact sum of its members");
    return;
  }
  const std::string error = psdp_get_last_error(team.comm);
  const std::string named = "peer " + std::to_string(team.victim_rank);
  report.check(s == PSDP_ERR_REMOTE,
               std::string(team.name) + " with the dead rank fails with remote error, got " + why(team.comm, s));
  report.check(error.find(named) != std::string::npos,
               std::string(team.name) + " names the dead rank as " + named + ": " + error);
  report.check(secondsSince(start) < kMaxSecondsToError, std::string(team.name) + ": the error came in time");
}

}  // namespace

int main(int argc, char** argv) {
  psdp::mp::Report report;
  int rank = 0, nranks = 1;
  psdp_comm_h comm = psdp::mp::initFromEnv(report, &rank, &nranks);
  if (comm == nullptr) return 1;
  const int victim = argc > 2 ? std::atoi(argv[1]) : -1;
  if (nranks < 4 || nranks % 2 != 0 || victim < 0 || victim >= nranks) {
    std::fprintf(stderr, "usage: mp_team_death VICTIM DIR, on an even number of ranks, at least 4\n");
    return 2;
  }
  const std::filesystem::path dir = argv[2];
  const int group = nranks / 2;
  std::vector<int> layout(static_cast<size_t>(nranks));
  report.check(psdp_comm_get_layout(comm, group, layout.data()) == PSDP_SUCCESS, "layout");
  Team shard{"shard team", nullptr, -1}, replica{"replica team", nullptr, -1};
  psdp_status_t s = psdp_comm_split_layout(comm, group, nullptr, &shard.comm, &replica.comm);
  report.check(s == PSDP_SUCCESS, "split_layout: " + why(comm, s));
  if (s != PSDP_SUCCESS) return report.finish();
  const auto position_of = [&](int r) {
    return static_cast<int>(std::find(layout.begin(), layout.end(), r) - layout.begin());
  };
  const int mine = position_of(rank), theirs = position_of(victim);
  if (mine / group == theirs / group) shard.victim_rank = theirs % group;
  if (mine % group == theirs % group) replica.victim_rank = theirs / group;

  // Every communicator is connected and working before anyone dies.
  std::vector<int32_t> warm(64, 1);
  for (psdp_comm_h c : {comm, shard.comm, replica.comm}) {
    s = psdp_all_reduce(warm.data(), warm.data(), warm.size(), PSDP_INT32, PSDP_SUM, c, nullptr, nullptr);
    report.check(s == PSDP_SUCCESS, "warm-up all-reduce: " + why(c, s));
  }

  // The survivors post their 32; the victim dies once they all have.
  std::vector<std::vector<int32_t>> buffers(kInFlight, std::vector<int32_t>(kCount, rank + 1));
  std::vector<psdp_request_h> requests(kInFlight, nullptr);
  if (rank != victim) {
    for (int i = 0; i < kInFlight; ++i) {
      s = psdp_all_reduce(buffers[i].data(), buffers[i].data(), kCount, PSDP_INT32, PSDP_SUM, comm, nullptr,
                          &requests[i]);
      report.check(s == PSDP_SUCCESS, "post " + std::to_string(i) + ": " + why(comm, s));
    }
  }
  report.check(reachStage(dir, "posted", rank, nranks), "every rank posted within 30 s");
  if (rank == victim) {
    std::fflush(stdout);
    raise(SIGKILL);
  }

  Clock::time_point start = Clock::now();
  const std::string victim_name = "peer " + std::to_string(victim);
  int failed_right = 0;
  for (int i = kInFlight - 1; i >= 0; --i) {
    if (requests[i] == nullptr) continue;
    s = psdp_request_wait(requests[i]);
    const std::string error = psdp_get_last_error(comm);
    if (s == PSDP_ERR_REMOTE && error.find(victim_name) != std::string::npos) {
      ++failed_right;
    } else {
      report.check(false, "in-flight all-reduce " + std::to_string(i) + " should fail naming " + victim_name +
                              ", got " + why(comm, s));
    }
    psdp_request_free(requests[i]);
  }
  const double seconds = secondsSince(start);
  report.check(failed_right == kInFlight,
               std::to_string(failed_right) + " of 32 in flight failed naming " + victim_name);
  report.check(seconds < kMaxSecondsToError, "the 32 failed within " + std::to_string(seconds) + " s");
  std::printf("rank %d: 32 in flight failed %.3f s after the death was awaited\n", rank, seconds);

  checkTeam(shard, rank, report);
  checkTeam(replica, rank, report);

  // Teams that lost a member cannot finalize; the others do, with their surviving members.
  for (const Team* team : {&shard, &replica}) {
    if (team->victim_rank < 0) report.check(psdp_comm_finalize(team->comm) == PSDP_SUCCESS, "finalize a whole team");
    psdp_comm_destroy(team->comm);
  }
  psdp_comm_destroy(comm);
  report.check(reachStage(dir, "done", rank, nranks - 1), "every survivor got its errors within 30 s");
  return report.finish();
}
