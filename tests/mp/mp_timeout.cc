// PSDP_TIMEOUT on one rank: rank 0 calls an all-reduce that the other ranks never join.
//   - rank 0 gets PSDP_ERR_TIMEOUT after its timeout (not before, and within a margin after), with an error
//     naming the operation (kind, sequence number, count) and the peer it was waiting on;
//   - its communicator is failed: the next call returns the error at once;
//   - the other ranks were told through rank 0's fail notice: their next call on that communicator fails at
//     once with PSDP_ERR_REMOTE naming rank 0 and its timeout, long before their own (much longer) timeout.
// The communicator under test is a child (psdp_comm_split) made with the timeout in its config (rank 0's
// short, the others' long), so that the parent, made under the test's long PSDP_TIMEOUT, can hold the
// other ranks in a broadcast that rank 0 joins only after its timeout: no sleep, no file, and rank 0's
// child call is the only one on the child that its peers never make.
// The all-reduce is large (rendezvous transfers, more than a shared-memory FIFO holds), so that the peers
// cannot complete their side from what rank 0 sent before it gave up: they must be told. With
// PSDP_PROGRESS=thread (the default) their transports' threads read the notice while they wait.
//   mp_timeout [--nonblocking]   (--nonblocking: rank 0 posts the all-reduce and blocks in psdp_request_wait)
#include <psdp/psdp.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "mp_report.h"

using psdp::mp::why;

namespace {

using Clock = std::chrono::steady_clock;
constexpr double kShortTimeoutS = 2.0;  // rank 0's
constexpr double kLongTimeoutS = 60.0;  // everyone else's: reaching it would mean the notice was lost
constexpr double kLateMarginS = 1.5;    // a loaded machine may be slow to notice the deadline
constexpr double kEarlyMarginS = 0.05;  // clocks and rounding; a timeout well before its time is a bug
constexpr double kAtOnceS = 1.0;        // "immediately", on a shared machine
constexpr size_t kCount = size_t{1} << 20;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Whether `text` has `prefix` followed by a number whose first digit is at least `lowest`. (std::regex
// would do, but GCC 12 warns inside <regex> under the sanitizers.)
bool containsNumbered(const std::string& text, const std::string& prefix, char lowest = '0') {
  for (size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at + 1)) {
    size_t digit = at + prefix.size();
    if (digit < text.size() && text[digit] >= lowest && text[digit] <= '9') return true;
  }
  return false;
}

// Rank 0's side: the all-reduce its peers never join, then a call on the failed communicator.
// Returns when the timeout came, on this host's monotonic clock (shared by the ranks' processes).
Clock::time_point timeOut(psdp_comm_h child, size_t count, bool nonblocking, psdp::mp::Report& report) {
  std::vector<int32_t> data(count, 1);
  Clock::time_point start = Clock::now();
  psdp_status_t s;
  if (nonblocking) {
    psdp_request_h request = nullptr;
    s = psdp_all_reduce(data.data(), data.data(), count, PSDP_INT32, PSDP_SUM, child, nullptr, &request);
    report.check(s == PSDP_SUCCESS, "post: " + why(child, s));
    if (s == PSDP_SUCCESS) {
      s = psdp_request_wait(request);
      report.check(psdp_request_free(request) == PSDP_SUCCESS, "free the timed-out request");
    }
  } else {
    s = psdp_all_reduce(data.data(), data.data(), count, PSDP_INT32, PSDP_SUM, child, nullptr, nullptr);
  }
  Clock::time_point timed_out = Clock::now();
  double seconds = std::chrono::duration<double>(timed_out - start).count();
  std::string error = psdp_get_last_error(child);
  report.check(s == PSDP_ERR_TIMEOUT, std::string("the all-reduce returns timeout, got ") + why(child, s));
  report.check(
      seconds >= kShortTimeoutS - kEarlyMarginS && seconds <= kShortTimeoutS + kLateMarginS,
      "timeout after " + std::to_string(seconds) + " s, PSDP_TIMEOUT " + std::to_string(kShortTimeoutS) + " s");
  report.check(error.find("timed out") != std::string::npos, "the error says it timed out: " + error);
  report.check(containsNumbered(error, "all-reduce #"), "the error names the kind and sequence number: " + error);
  report.check(error.find("count " + std::to_string(count)) != std::string::npos,
               "the error names the count: " + error);
  report.check(containsNumbered(error, "peer ", '1'), "the error names a peer it waited on: " + error);
  std::printf("rank 0: timeout after %.3f s (PSDP_TIMEOUT %.1f s): %s\n", seconds, kShortTimeoutS, error.c_str());

  start = Clock::now();
  s = psdp_barrier(child, nullptr);
  seconds = secondsSince(start);
  report.check(s == PSDP_ERR_TIMEOUT && seconds < kAtOnceS,
               "the next call fails at once with the timeout (" + std::to_string(seconds) + " s): " + why(child, s));
  return timed_out;
}

// Another rank's side: its first call on the child after rank 0 timed out.
void toldByNotice(psdp_comm_h child, int rank, size_t count, Clock::time_point rank0_timed_out,
                  psdp::mp::Report& report) {
  std::vector<int32_t> data(count, 1);
  Clock::time_point start = Clock::now();
  psdp_status_t s = psdp_all_reduce(data.data(), data.data(), count, PSDP_INT32, PSDP_SUM, child, nullptr, nullptr);
  double seconds = secondsSince(start);
  double since_timeout = std::chrono::duration<double>(Clock::now() - rank0_timed_out).count();
  std::string error = psdp_get_last_error(child);
  report.check(s == PSDP_ERR_REMOTE, "the call fails with remote error: " + why(child, s));
  report.check(error.find("peer 0") != std::string::npos && error.find("timed out") != std::string::npos,
               "the error names rank 0 and its timeout (from its notice): " + error);
  report.check(seconds < kAtOnceS, "the call failed after " + std::to_string(seconds) + " s, own timeout " +
                                       std::to_string(kLongTimeoutS) + " s");
  std::printf("rank %d: remote error %.3f s after the call, %.3f s after rank 0's timeout: %s\n", rank, seconds,
              since_timeout, error.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  psdp::mp::Report report;
  int rank = 0, nranks = 1;
  psdp_comm_h parent = psdp::mp::initFromEnv(report, &rank, &nranks);
  if (parent == nullptr) return 1;
  if (nranks < 2) {
    std::fprintf(stderr, "mp_timeout needs at least 2 ranks\n");
    return 2;
  }
  bool nonblocking = argc > 1 && std::string(argv[1]) == "--nonblocking";

  psdp_config_t config = PSDP_CONFIG_INITIALIZER;
  config.timeout_s = rank == 0 ? kShortTimeoutS : kLongTimeoutS;
  psdp_comm_h child = nullptr;
  psdp_status_t s = psdp_comm_split(parent, 0, rank, &config, &child);
  report.check(s == PSDP_SUCCESS && child != nullptr, "split: " + why(parent, s));
  if (child == nullptr) return report.finish();
  std::vector<int32_t> warm(1000, 1);
  s = psdp_all_reduce(warm.data(), warm.data(), warm.size(), PSDP_INT32, PSDP_SUM, child, nullptr, nullptr);
  report.check(s == PSDP_SUCCESS && warm[0] == nranks, "child warm-up: " + why(child, s));

  // The others wait here, in the parent, while rank 0 times out on the child; then learn when it did.
  int64_t timed_out_ns = 0;
  if (rank == 0) timed_out_ns = timeOut(child, kCount, nonblocking, report).time_since_epoch().count();
  s = psdp_broadcast(&timed_out_ns, &timed_out_ns, 1, PSDP_INT64, 0, parent, nullptr, nullptr);
  report.check(s == PSDP_SUCCESS, "parent broadcast of rank 0's timeout: " + why(parent, s));
  if (rank != 0) toldByNotice(child, rank, kCount, Clock::time_point(Clock::duration(timed_out_ns)), report);

  report.check(psdp_comm_destroy(child) == PSDP_SUCCESS, "destroy the failed child");
  s = psdp_barrier(parent, nullptr);
  report.check(s == PSDP_SUCCESS, "the parent is unaffected: " + why(parent, s));
  s = psdp_comm_finalize(parent);
  report.check(s == PSDP_SUCCESS, "parent finalize: " + why(parent, s));
  report.check(psdp_comm_destroy(parent) == PSDP_SUCCESS, "parent destroy");
  return report.finish();
}
