// A rank is stopped (SIGSTOP: hung, not dead) while every rank runs all-reduces back to back. Its process
// lives, so nothing reports it; every survivor must fail within its timeout (PSDP_TIMEOUT, short here),
// with an error naming the stopped rank as the one that did not answer the liveness probe, even survivors
// that are not its ring neighbours and so were waiting on someone else. The first survivor to time out
// tells the others (remote error, its message inside). Once every survivor has its error, the lowest one
// kills the stopped rank, so that expect_rank_killed.sh finds it killed by SIGKILL.
//   mp_stopped_rank VICTIM DIR BYTES
#include <psdp/psdp.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "mp_fault_job.h"
#include "mp_report.h"
#include "mp_stages.h"

using psdp::mp::Clock;
using psdp::mp::reachStage;
using psdp::mp::secondsSince;
using psdp::mp::why;

namespace {

// The latest a survivor's error may come: the test's PSDP_TIMEOUT (5 s), the probe, and the slack of a loaded
// machine.
constexpr double kMaxSecondsToError = 20.0;

}  // namespace

int main(int argc, char** argv) {
  psdp::mp::Report report;
  int rank = 0, nranks = 1;
  psdp_comm_h comm = psdp::mp::initFromEnv(report, &rank, &nranks);
  if (comm == nullptr) return 1;
  std::optional<psdp::mp::FaultJob> job =
      psdp::mp::startFaultJob("mp_stopped_rank", argc, argv, comm, rank, nranks, report);
  if (!job) return 2;
  const int victim = job->victim;
  const std::filesystem::path& dir = job->dir;
  if (rank == victim) {
    std::ofstream(dir / "victim.pid") << getpid() << '\n';
    psdp::mp::postAndRaise(*job, comm, report, SIGSTOP);  // every thread stops; a survivor kills it
    return 3;
  }

  Clock::time_point start = Clock::now();
  int rounds = 0;
  psdp_status_t s = psdp::mp::allReduceUntilError(*job, comm, kMaxSecondsToError, &rounds);
  const double seconds = secondsSince(start);
  const std::string error = psdp_get_last_error(comm);
  const std::string named = "; rank " + std::to_string(victim) + " did not answer a liveness probe";
  report.check(s == PSDP_ERR_TIMEOUT || s == PSDP_ERR_REMOTE, "timeout, or told of one: " + why(comm, s));
  report.check(error.find(named) != std::string::npos,
               "the error names rank " + std::to_string(victim) + " alone as silent: " + error);
  report.check(error.find("stopped by a signal: " + std::to_string(victim)) != std::string::npos,
               "the error says it is stopped: " + error);
  report.check(seconds < kMaxSecondsToError, "the error came after " + std::to_string(seconds) + " s");
  std::printf("rank %d: error after %.3f s: %s\n", rank, seconds, error.c_str());
  // Answering each other's probes until all have their errors: the survivors wait in psdp's company.
  report.check(reachStage(dir, "done", rank, nranks - 1), "every survivor got its error within 30 s");
  if (rank == (victim == 0 ? 1 : 0)) {
    pid_t pid = 0;
    std::ifstream(dir / "victim.pid") >> pid;
    report.check(pid > 0 && kill(pid, SIGKILL) == 0, "killed the stopped rank");
  }
  report.check(psdp_comm_destroy(comm) == PSDP_SUCCESS, "destroy after the failure");
  return report.finish();
}
