// The kill matrix: a rank is SIGKILLed while every rank runs all-reduces back to back, and every survivor
// must get PSDP_ERR_REMOTE naming the dead rank, within a few seconds. Unlike mp_peer_death, survivors do
// not wait for each other: each one goes its own way the moment it has its error (it destroys its
// communicator and exits, or, on odd ranks, exits with the failed communicator alive), so the slower
// survivors also see the faster ones leave, and their errors must still name the rank that died first.
// Run through expect_rank_killed.sh (psdp-run --keep-going), which checks that psdp-run names the victim
// with its signal.
//   mp_kill_matrix VICTIM DIR BYTES
// BYTES: the size of each all-reduce (small ones run the halving/doubling or ring algorithms, large ones
// the direct path, reading the peers' memory with CMA).
#include <psdp/psdp.h>
#include <signal.h>

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
// A survivor whose all-reduces still succeed after this long never learned of the death.
constexpr double kMaxSecondsRunning = 30.0;

}  // namespace

int main(int argc, char** argv) {
  psdp::mp::Report report;
  int rank = 0, nranks = 1;
  psdp_comm_h comm = psdp::mp::initFromEnv(report, &rank, &nranks);
  if (comm == nullptr) return 1;
  const int victim = argc > 3 ? std::atoi(argv[1]) : -1;
  const size_t bytes = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 0;
  if (nranks < 2 || victim < 0 || victim >= nranks || bytes < sizeof(int32_t)) {
    std::fprintf(stderr, "usage: mp_kill_matrix VICTIM DIR BYTES, on at least 2 ranks (victim %d of %d)\n", victim,
                 nranks);
    return 2;
  }
  const std::filesystem::path dir = argv[2];
  const size_t count = bytes / sizeof(int32_t);
  std::vector<int32_t> data(count, 1);

  psdp_status_t s = psdp_all_reduce(data.data(), data.data(), count, PSDP_INT32, PSDP_SUM, comm, nullptr, nullptr);
  report.check(s == PSDP_SUCCESS, "warm-up all-reduce: " + why(comm, s));
  report.check(reachStage(dir, "warm", rank, nranks), "every rank finished the warm-up within 30 s");

  if (rank == victim) {
    psdp_request_h request = nullptr;
    s = psdp_all_reduce(data.data(), data.data(), count, PSDP_INT32, PSDP_SUM, comm, nullptr, &request);
    report.check(s == PSDP_SUCCESS, "victim's post: " + why(comm, s));
    (void)psdp_request_test(request);
    std::fflush(stdout);
    raise(SIGKILL);
  }

  // The values grow each round; their exactness is not the point (the victim's last round is partial).
  Clock::time_point start = Clock::now();
  int rounds = 0;
  do {
    s = psdp_all_reduce(data.data(), data.data(), count, PSDP_INT32, PSDP_SUM, comm, nullptr, nullptr);
    ++rounds;
  } while (s == PSDP_SUCCESS && secondsSince(start) < kMaxSecondsRunning);
  const double seconds = secondsSince(start);
  const std::string error = psdp_get_last_error(comm);
  const std::string victim_name = "peer " + std::to_string(victim) + " ";
  report.check(s == PSDP_ERR_REMOTE,
               "all-reduce round " + std::to_string(rounds) + " returns remote error, got " + why(comm, s));
  report.check(error.find(victim_name) != std::string::npos,
               "the error names peer " + std::to_string(victim) + ": " + error);
  report.check(seconds < kMaxSecondsToError, "the error came " + std::to_string(seconds) + " s after the kill, limit " +
                                                 std::to_string(kMaxSecondsToError) + " s");
  std::printf("rank %d: error after %d rounds, %.3f s: %s\n", rank, rounds, seconds, error.c_str());
  // Half the survivors leave without destroying: exiting with a failed communicator must be safe too.
  if (rank % 2 == 0) report.check(psdp_comm_destroy(comm) == PSDP_SUCCESS, "destroy after the failure");
  return report.finish();
}
