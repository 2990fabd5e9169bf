// A rank dies (SIGKILL) in the middle of an all-reduce (or, with --op, an all-to-all, a reduce to rank 0, or
// receives from it); every survivor must get PSDP_ERR_REMOTE from that call, naming the dead rank, within a
// few seconds (PSDP_TIMEOUT is far longer), and the same error at once from every later call. Run through
// expect_rank_killed.sh, which launches it with `psdp-run --keep-going` and checks that exactly the victim was killed
// and every other rank passed.
//   mp_peer_death VICTIM DIR [--any-cause] [--op=all-reduce|all-to-all|reduce|recv]
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

// The call every rank makes while the victim dies: the survivors' is blocking, the victim's nonblocking.
// recv: the survivors wait for a message from the victim, which never sends one: it waits for one itself, and dies.
psdp_status_t deathCall(const std::string& op, std::vector<int32_t>& data, int rank, int nranks, int victim,
                        psdp_comm_h comm, psdp_request_h* request_p) {
  const size_t block = kCount / static_cast<size_t>(nranks);
  if (op == "all-to-all") {
    return psdp_all_to_all(data.data(), data.data() + kCount, block, PSDP_INT32, comm, nullptr, request_p);
  }
  if (op == "reduce") {
    return psdp_reduce(data.data(), data.data() + kCount, kCount, PSDP_INT32, PSDP_SUM, 0, comm, nullptr, request_p);
  }
  if (op == "recv") {
    const int source = rank == victim ? (victim + 1) % nranks : victim;
    return psdp_recv(data.data(), block, PSDP_INT32, source, comm, nullptr, request_p);
  }
  return psdp_all_reduce(data.data(), data.data(), kCount, PSDP_INT32, PSDP_SUM, comm, nullptr, request_p);
}

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
  bool any_cause = false;
  std::string op = "all-reduce";
  for (int i = 3; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--any-cause") any_cause = true;
    if (arg.rfind("--op=", 0) == 0) op = arg.substr(5);
  }
  // Twice the count: the calls with an output of their own write the second half.
  std::vector<int32_t> data(2 * kCount, rank + 1);
  // Every rank is connected and working before anyone dies.
  psdp_status_t s = psdp_all_reduce(data.data(), data.data(), 1024, PSDP_INT32, PSDP_SUM, comm, nullptr, nullptr);
  report.check(s == PSDP_SUCCESS, "warm-up all-reduce: " + why(comm, s));
  // A death while slower ranks still finish the warm-up would fail it there (psdp fails a communicator as
  // soon as a rank is lost): the victim dies only once everyone is done with it.
  report.check(reachStage(dir, "warm", rank, nranks), "every rank finished the warm-up within 30 s");

  if (rank == victim) {
    psdp_request_h request = nullptr;
    s = deathCall(op, data, rank, nranks, victim, comm, &request);
    report.check(s == PSDP_SUCCESS, "victim's post: " + why(comm, s));
    // Dies with its part of the call under way.
    (void)psdp_request_test(request);
    std::fflush(stdout);
    raise(SIGKILL);
  }

  Clock::time_point start = Clock::now();
  s = deathCall(op, data, rank, nranks, victim, comm, nullptr);
  double seconds = secondsSince(start);
  std::string error = psdp_get_last_error(comm);
  std::string victim_name = "peer " + std::to_string(victim);
  report.check(s == PSDP_ERR_REMOTE, "the " + op + " returns remote error, got " + why(comm, s));
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
