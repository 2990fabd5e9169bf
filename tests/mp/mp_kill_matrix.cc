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

#include <cstdio>
#include <filesystem>
#include <string>

#include "mp_fault_job.h"
#include "mp_report.h"
#include "mp_stages.h"

using psdp::mp::Clock;
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
  std::optional<psdp::mp::FaultJob> job =
      psdp::mp::startFaultJob("mp_kill_matrix", argc, argv, comm, rank, nranks, report);
  if (!job) return 2;
  const int victim = job->victim;
  if (rank == victim) psdp::mp::postAndRaise(*job, comm, report, SIGKILL);

  Clock::time_point start = Clock::now();
  int rounds = 0;
  psdp_status_t s = psdp::mp::allReduceUntilError(*job, comm, kMaxSecondsRunning, &rounds);
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
