// psdp_comm_abort from a second thread while the first is blocked in a collective, on a child communicator
// (psdp_comm_split) so that the parent stays usable to coordinate and to make a new child afterwards:
//   - rank 0's blocked all-reduce returns PSDP_ERR_ABORTED soon after the abort, later calls too;
//   - the other ranks' next call on their child fails with PSDP_ERR_REMOTE naming rank 0, at once;
//   - destroying the aborted child leaves no thread, file descriptor or shared-memory segment behind;
//   - a new child communicator then works.
#include <dirent.h>
#include <psdp/psdp.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "mp_report.h"

using psdp::mp::why;

namespace {

using Clock = std::chrono::steady_clock;
constexpr double kMaxSecondsToError = 2.0;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int countEntries(const char* dir) {
  int n = 0;
  if (DIR* d = opendir(dir)) {
    while (readdir(d) != nullptr) ++n;
    closedir(d);
  }
  return n;
}

// System V shared-memory segments this process created that still exist (UCX's sysv transport).
int sysvSegments() {
  std::ifstream table("/proc/sysvipc/shm");
  std::string line;
  std::getline(table, line);  // header: key shmid perms size cpid lpid ...
  int n = 0;
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    long key, shmid, perms, size, cpid;
    if (fields >> key >> shmid >> perms >> size >> cpid && cpid == getpid()) ++n;
  }
  return n;
}

struct Resources {
  int threads = 0;
  int fds = 0;
  int sysv_segments = 0;
  bool operator==(const Resources&) const = default;
  std::string str() const {
    return std::to_string(threads) + " threads, " + std::to_string(fds) + " fds, " + std::to_string(sysv_segments) +
           " sysv segments";
  }
};

Resources resources() {
  return Resources{countEntries("/proc/self/task"), countEntries("/proc/self/fd"), sysvSegments()};
}

psdp_comm_h split(psdp_comm_h parent, int rank, psdp::mp::Report& report) {
  psdp_comm_h child = nullptr;
  psdp_status_t s = psdp_comm_split(parent, 0, rank, nullptr, &child);
  report.check(s == PSDP_SUCCESS && child != nullptr, "split: " + why(parent, s));
  return child;
}

bool allReduceOk(psdp_comm_h comm, int nranks, psdp::mp::Report& report, const std::string& what) {
  std::vector<int> data(1000, 1);
  psdp_status_t s =
      psdp_all_reduce(data.data(), data.data(), data.size(), PSDP_INT32, PSDP_SUM, comm, nullptr, nullptr);
  bool ok = s == PSDP_SUCCESS && data[0] == nranks && data.back() == nranks;
  report.check(ok, what + ": " + why(comm, s));
  return ok;
}

}  // namespace

int main() {
  psdp::mp::Report report;
  int rank = 0, nranks = 1;
  psdp_comm_h parent = psdp::mp::initFromEnv(report, &rank, &nranks);
  if (parent == nullptr) return 1;
  allReduceOk(parent, nranks, report, "parent warm-up");

  // A first child's whole life, so that whatever UCX keeps per process from then on is in the baseline.
  psdp_comm_h first = split(parent, rank, report);
  allReduceOk(first, nranks, report, "first child");
  report.check(psdp_comm_finalize(first) == PSDP_SUCCESS && psdp_comm_destroy(first) == PSDP_SUCCESS,
               "first child finalize and destroy");
  psdp_status_t s = psdp_barrier(parent, nullptr);
  report.check(s == PSDP_SUCCESS, "parent barrier after the first child: " + why(parent, s));
  const Resources baseline = resources();

  psdp_comm_h child = split(parent, rank, report);
  allReduceOk(child, nranks, report, "child warm-up");
  std::vector<int> data(size_t{1} << 20, 1);
  if (rank == 0) {
    // The others never join this all-reduce, so it blocks until the abort. The aborting thread waits for
    // the call to begin and then a little more, to make the blocked case the likely one; an abort landing
    // just before the call is valid too (the call then fails at once), only less interesting.
    std::atomic<bool> calling{false};
    Clock::time_point aborted_at;
    std::thread aborter([&] {
      while (!calling.load()) std::this_thread::yield();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      aborted_at = Clock::now();
      psdp_status_t a = psdp_comm_abort(child);
      report.check(a == PSDP_SUCCESS, "psdp_comm_abort: " + why(child, a));
    });
    calling.store(true);
    psdp_status_t s =
        psdp_all_reduce(data.data(), data.data(), data.size(), PSDP_INT32, PSDP_SUM, child, nullptr, nullptr);
    Clock::time_point returned = Clock::now();
    aborter.join();
    double seconds = std::chrono::duration<double>(returned - aborted_at).count();
    report.check(s == PSDP_ERR_ABORTED, "the blocked all-reduce returns aborted: " + why(child, s));
    report.check(seconds < kMaxSecondsToError, "it returned " + std::to_string(seconds) + " s after the abort");
    std::printf("rank 0: blocked all-reduce returned %.3f s after psdp_comm_abort\n", seconds);
    s = psdp_barrier(child, nullptr);
    report.check(s == PSDP_ERR_ABORTED, "a later call returns aborted: " + why(child, s));
    report.check(psdp_comm_abort(child) == PSDP_SUCCESS, "a second abort is harmless");
  }
  // The parent is healthy: rank 0 enters this barrier only after its abort.
  s = psdp_barrier(parent, nullptr);
  report.check(s == PSDP_SUCCESS, "parent barrier after the abort: " + why(parent, s));
  if (rank != 0) {
    Clock::time_point start = Clock::now();
    s = psdp_all_reduce(data.data(), data.data(), data.size(), PSDP_INT32, PSDP_SUM, child, nullptr, nullptr);
    double seconds = secondsSince(start);
    std::string error = psdp_get_last_error(child);
    report.check(s == PSDP_ERR_REMOTE && error.find("peer 0") != std::string::npos,
                 "a peer's next call fails with remote error naming rank 0: " + why(child, s));
    report.check(seconds < kMaxSecondsToError, "it failed " + std::to_string(seconds) + " s after the call");
    std::printf("rank %d: %.3f s: %s\n", rank, seconds, error.c_str());
  }
  report.check(psdp_comm_destroy(child) == PSDP_SUCCESS, "destroy after the abort");
  // A segment lives on while a peer still maps it: count once every rank has destroyed its child.
  s = psdp_barrier(parent, nullptr);
  report.check(s == PSDP_SUCCESS, "parent barrier after the destroys: " + why(parent, s));
  Resources after = resources();
  report.check(after == baseline, "nothing left behind by abort + destroy: " + after.str() + " now, " + baseline.str() +
                                      " before the child");
  std::printf("rank %d: after abort + destroy %s, before %s\n", rank, after.str().c_str(), baseline.str().c_str());

  psdp_comm_h again = split(parent, rank, report);
  allReduceOk(again, nranks, report, "a new child after the abort");
  report.check(psdp_comm_finalize(again) == PSDP_SUCCESS && psdp_comm_destroy(again) == PSDP_SUCCESS,
               "new child finalize and destroy");
  report.check(psdp_comm_finalize(parent) == PSDP_SUCCESS, "parent finalize");
  report.check(psdp_comm_destroy(parent) == PSDP_SUCCESS, "parent destroy");
  return report.finish();
}
