// The checks of a multi-process test program: every rank counts its passed and failed checks, prints each
// failure with its rank, and ends with "rank R: N passed, N failed" and exit status 1 on any failure.
#pragma once

#include <psdp/psdp.h>

#include <cstdio>
#include <mutex>
#include <string>

namespace psdp::mp {

class Report {
 public:
  void setRank(int rank) { rank_ = rank; }
  // Thread-safe: split tests check from several threads.
  void check(bool ok, const std::string& what) {
    std::lock_guard lock(mutex_);
    if (ok) {
      ++passed_;
    } else {
      ++failed_;
      std::fprintf(stderr, "rank %d FAILED: %s\n", rank_, what.c_str());
    }
  }
  // The process exit status.
  int finish() const {
    std::printf("rank %d: %d passed, %d failed\n", rank_, passed_, failed_);
    return failed_ == 0 ? 0 : 1;
  }

 private:
  std::mutex mutex_;
  int rank_ = -1;
  int passed_ = 0;
  int failed_ = 0;
};

// "<status>: <last error of comm>", for failure messages.
inline std::string why(psdp_comm_h comm, psdp_status_t s) {
  return std::string(psdp_status_string(s)) + " " + psdp_get_last_error(comm);
}

// Joins the job psdp-run (or another launcher) describes and records rank and size; on failure prints why
// and returns NULL.
inline psdp_comm_h initFromEnv(Report& report, int* rank, int* nranks) {
  psdp_comm_h comm = nullptr;
  psdp_status_t s = psdp_comm_init_from_env(nullptr, &comm);
  if (s != PSDP_SUCCESS) {
    std::fprintf(stderr, "init failed: %s\n", why(nullptr, s).c_str());
    return nullptr;
  }
  psdp_comm_rank(comm, rank);
  psdp_comm_size(comm, nranks);
  report.setRank(*rank);
  return comm;
}

}  // namespace psdp::mp
