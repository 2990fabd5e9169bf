// A short multi-process smoke test, run by psdp-run and by other launchers' environments:
//   psdp-run -n 4 -- mp_collectives
// One all-reduce, then bad arguments refused locally on every rank without harming the communicator. The
// correctness of every collective, dtype and op is mp_matrix's.
#include <psdp/psdp.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "mp_report.h"

using psdp::mp::why;

namespace {

int g_rank = 0;
int g_nranks = 1;
psdp::mp::Report g_report;

// The input of rank r at index i: small integers, so the int32 sum is exact.
int32_t input(int r, size_t i) {
  return static_cast<int32_t>((r + 1) * 1000 + static_cast<int>(i % 991));
}

// An int32 sum all-reduce of `count` elements, every element checked: the communicator works.
void runAllReduce(psdp_comm_h comm, const std::string& what, size_t count) {
  std::vector<int32_t> send(count), recv(count + 1, -1);
  for (size_t i = 0; i < count; ++i) send[i] = input(g_rank, i);
  psdp_status_t s = psdp_all_reduce(send.data(), recv.data(), count, PSDP_INT32, PSDP_SUM, comm, nullptr, nullptr);
  bool ok = s == PSDP_SUCCESS && recv[count] == -1;
  for (size_t i = 0; ok && i < count; ++i) {
    int32_t want = 0;
    for (int r = 0; r < g_nranks; ++r) want += input(r, i);
    ok = recv[i] == want;
  }
  g_report.check(ok, what + ": " + why(comm, s));
}

// Bad arguments are refused locally on every rank, and the communicator still works afterwards.
void runBadInput(psdp_comm_h comm) {
  float x[8] = {0};
  g_report.check(
      psdp_all_reduce(nullptr, x, 8, PSDP_FLOAT32, PSDP_SUM, comm, nullptr, nullptr) == PSDP_ERR_INVALID_ARGUMENT &&
          std::strstr(psdp_get_last_error(comm), "sendbuf") != nullptr,
      "NULL sendbuf is an invalid argument naming sendbuf");
  g_report.check(
      psdp_all_reduce(x, x + 1, 4, PSDP_FLOAT32, PSDP_SUM, comm, nullptr, nullptr) == PSDP_ERR_INVALID_ARGUMENT &&
          std::strstr(psdp_get_last_error(comm), "overlap") != nullptr,
      "overlapping all-reduce buffers are an invalid argument");
  runAllReduce(comm, "all-reduce after bad input", 1000);
}

}  // namespace

int main() {
  psdp_comm_h comm = psdp::mp::initFromEnv(g_report, &g_rank, &g_nranks);
  if (comm == nullptr) return 1;
  runAllReduce(comm, "all-reduce", 1000);
  runBadInput(comm);
  psdp_status_t s = psdp_comm_finalize(comm);
  g_report.check(s == PSDP_SUCCESS,
                 std::string("finalize: ") + psdp_status_string(s) + " " + psdp_get_last_error(comm));
  g_report.check(psdp_comm_destroy(comm) == PSDP_SUCCESS, "destroy");
  return g_report.finish();
}
