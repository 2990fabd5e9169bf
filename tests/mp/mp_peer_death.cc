// A rank dies (SIGKILL) in the middle of an all-reduce; every survivor must get PSDP_ERR_REMOTE from that
// all-reduce, naming the dead rank, within a few seconds (PSDP_TIMEOUT is far longer), and the same error at
// once from every later call. Run through expect_rank_killed.sh, which launches it with
// `psdp-run --keep-going` and checks that exactly the victim was killed and every other rank passed.
//   mp_peer_death VICTIM DIR [--any-cause]
// VICTIM: the rank that dies (the scripts pick the middle one, so that some survivors are not its ring
// neighbours). DIR: an empty directory the ranks use to wait for each other outside psdp: before the
// victim dies, and before survivors exit (one that exits early is a second dead peer for the slower ones,
// and their errors might name it). --any-cause: do not require the error to name the victim. Over TCP a
// survivor may see a neighbour's connection reset (that neighbour failing over the victim) before it sees
// the victim's own exit, and then names the neighbour.
#include <psdp/psdp.h>
#include <signal.h>

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

// Well below the PSDP_TIMEOUT the test runs with: the error must come from detecting the death.
constexpr double kMaxSecondsToError = 5.0;
// Large enough that the all-reduce is still running when the victim dies.
constexpr size_t kCount = size_t{16} << 20;

}  // namespace

int main(int argc, char** argv) {
  psdp::mp::Report report;
  int rank = 0, nranks = 1;
  psdp_comm_h comm = psdp::mp::initFromEnv(report, &rank, &nranks);
  if (comm == nullptr) return 1;
  int victim = argc > 2 ? std::atoi(argv[1]) : -1;
  if (nranks < 2 || victim < 0 || victim >= nranks) {
    std::fprintf(stderr, "usage: mp_peer_death VICTIM DIR, on at least 2 ranks (victim %d of %d)\n", victim, nranks);
    return 2;
  }
  const std::filesystem::path dir = argv[2];
  std::vector<int32_t> data(kCount, rank + 1);
  // Every rank is connected and working before anyone dies.
  psdp_status_t s = psdp_all_reduce(data.data(), data.data(), 1024, PSDP_INT32, PSDP_SUM, comm, nullptr, nullptr);
  report.check(s == PSDP_SUCCESS, "warm-up all-reduce: " + why(comm, s));
  // A death while slower ranks still finish the warm-up would fail it there (psdp fails a communicator as
  // soon as a rank is lost): the victim dies only once everyone is done with it.
  report.check(reachStage(dir, "warm", rank, nranks), "every rank finished the warm-up within 30 s");

  if (rank == victim) {
    psdp_request_h request = nullptr;
    s = psdp_all_reduce(data.data(), data.data(), kCount, PSDP_INT32, PSDP_SUM, comm, nullptr, &request);
    report.check(s == PSDP_SUCCESS, "victim's post: " + why(comm, s));
    // Dies with its part of the all-reduce under way.
    (void)psdp_request_test(request);
    std::fflush(stdout);
    raise(SIGKILL);
  }

  Clock::time_point start = Clock::now();
  s = psdp_all_reduce(data.data(), data.data(), kCount, PSDP_INT32, PSDP_SUM, comm, nullptr, nullptr);
  double seconds = secondsSince(start);
  std::string error = psdp_get_last_error(comm);
  std::string victim_name = "peer " + std::to_string(victim);
  report.check(s == PSDP_ERR_REMOTE, std::string("the all-reduce returns remote error, got ") + why(comm, s));
  bool any_cause = argc > 3 && std::string(argv[3]) == "--any-cause";
  report.check(any_cause || error.find(victim_name) != std::string::npos,
               "the error names " + victim_name + ": " + error);
  report.check(seconds < kMaxSecondsToError, "the error came " + std::to_string(seconds) + " s after the call, limit " +
                                                 std::to_string(kMaxSecondsToError) + " s");
  std::printf("rank %d: error %.3f s after the call: %s\n", rank, seconds, error.c_str());

  start = Clock::now();
  s = psdp_barrier(comm, nullptr);
  report.check(s == PSDP_ERR_REMOTE && secondsSince(start) < 1.0,
               "a later call fails at once with remote error: " + why(comm, s));
  report.check(psdp_comm_destroy(comm) == PSDP_SUCCESS, "destroy after the failure");
  report.check(reachStage(dir, "done", rank, nranks - 1), "every survivor got its error within 30 s");
  return report.finish();
}
