// What the kill and stop tests (mp_kill_matrix, mp_stopped_rank) share: their arguments (VICTIM DIR BYTES), a
// warm-up every rank finishes before anyone is hurt, the victim's last act (an all-reduce posted and started,
// then a signal to itself) and the survivors' all-reduces back to back until one fails.
#pragma once

#include <psdp/psdp.h>
#include <signal.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "mp_report.h"
#include "mp_stages.h"

namespace psdp::mp {

struct FaultJob {
  int victim = -1;
  std::filesystem::path dir;  // shared by the ranks for reachStage
  std::vector<int32_t> data;  // the all-reduces' buffer (in place)
};

// Parses VICTIM DIR BYTES (printing the usage of `program` when they are wrong) and runs the warm-up.
inline std::optional<FaultJob> startFaultJob(const char* program, int argc, char** argv, psdp_comm_h comm, int rank,
                                             int nranks, Report& report) {
  FaultJob job;
  job.victim = argc > 3 ? std::atoi(argv[1]) : -1;
  const size_t bytes = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 0;
  if (nranks < 2 || job.victim < 0 || job.victim >= nranks || bytes < sizeof(int32_t)) {
    std::fprintf(stderr, "usage: %s VICTIM DIR BYTES, on at least 2 ranks (victim %d of %d)\n", program, job.victim,
                 nranks);
    return std::nullopt;
  }
  job.dir = argv[2];
  job.data.assign(bytes / sizeof(int32_t), 1);
  psdp_status_t s =
      psdp_all_reduce(job.data.data(), job.data.data(), job.data.size(), PSDP_INT32, PSDP_SUM, comm, nullptr, nullptr);
  report.check(s == PSDP_SUCCESS, "warm-up all-reduce: " + why(comm, s));
  report.check(reachStage(job.dir, "warm", rank, nranks), "every rank finished the warm-up within 30 s");
  return job;
}

// The victim posts an all-reduce, lets it start, and raises `signal` with its part under way.
inline void postAndRaise(FaultJob& job, psdp_comm_h comm, Report& report, int signal) {
  psdp_request_h request = nullptr;
  psdp_status_t s =
      psdp_all_reduce(job.data.data(), job.data.data(), job.data.size(), PSDP_INT32, PSDP_SUM, comm, nullptr, &request);
  report.check(s == PSDP_SUCCESS, "victim's post: " + why(comm, s));
  (void)psdp_request_test(request);
  std::fflush(stdout);
  raise(signal);
}

// A survivor's all-reduces, back to back until one fails or `seconds` have passed (the values grow each
// round; their exactness is not the point, the victim's last round is partial). Returns the last status.
inline psdp_status_t allReduceUntilError(FaultJob& job, psdp_comm_h comm, double seconds, int* rounds) {
  Clock::time_point start = Clock::now();
  psdp_status_t s = PSDP_SUCCESS;
  *rounds = 0;
  do {
    s = psdp_all_reduce(job.data.data(), job.data.data(), job.data.size(), PSDP_INT32, PSDP_SUM, comm, nullptr,
                        nullptr);
    ++*rounds;
  } while (s == PSDP_SUCCESS && secondsSince(start) < seconds);
  return s;
}

}  // namespace psdp::mp
