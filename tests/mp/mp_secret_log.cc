// The job secret never reaches a log of a psdp-run job. expect_no_secret_in_logs.sh runs this program in
// two roles:
//   mp_secret_log                    under psdp-run, at debug level, logs in files: every rank joins
//                                    through psdp_comm_init_from_env (PSDP_JOB_SECRET), all-reduces,
//                                    finalizes and destroys;
//   mp_secret_log --check DIR SECRET once every rank has exited (and so flushed its logs): passes only if
//                                    the files in DIR hold this run's debug lines and no 8-byte piece of
//                                    SECRET, as hex or raw bytes.
#include <psdp/psdp.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "mp_report.h"
#include "unit/api/secret_forms.h"

using psdp::mp::why;

namespace {

int runRank() {
  psdp::mp::Report report;
  int rank = 0, nranks = 1;
  psdp_comm_h comm = psdp::mp::initFromEnv(report, &rank, &nranks);
  if (comm == nullptr) return 1;
  int value = rank + 1;
  psdp_status_t s = psdp_all_reduce(&value, &value, 1, PSDP_INT32, PSDP_SUM, comm, nullptr, nullptr);
  report.check(s == PSDP_SUCCESS && value == nranks * (nranks + 1) / 2, "all-reduce: " + why(comm, s));
  s = psdp_comm_finalize(comm);
  report.check(s == PSDP_SUCCESS, "finalize: " + why(comm, s));
  report.check(psdp_comm_destroy(comm) == PSDP_SUCCESS, "destroy");
  return report.finish();
}

int checkLogs(const std::filesystem::path& dir, const std::string& secret) {
  std::string logs;
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    logs += std::string(std::istreambuf_iterator<char>(in), {});
    ++files;
  }
  int failed = 0;
  auto check = [&](bool ok, const std::string& what) {
    if (!ok) std::fprintf(stderr, "FAILED: %s\n", what.c_str());
    failed += ok ? 0 : 1;
  };
  // The capture itself: the root's and the ranks' debug lines.
  check(logs.find("bootstrap root listening on") != std::string::npos, "the root's debug lines are in the logs");
  check(logs.find("rendezvous at") != std::string::npos, "the ranks' debug lines are in the logs");
  for (const std::string& form : psdp::testing::secretForms(secret)) {
    check(logs.find(form) == std::string::npos, "a log holds part of the job secret: " + form);
  }
  std::printf("%d log files, %zu bytes: %s\n", files, logs.size(), failed == 0 ? "no secret" : "FAILED");
  return failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "--check") return checkLogs(argv[2], argv[3]);
  if (argc != 1) {
    std::fprintf(stderr, "usage: mp_secret_log [--check DIR SECRET]\n");
    return 2;
  }
  return runRank();
}
