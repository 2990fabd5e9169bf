// Multi-process collective correctness, run by psdp-run for several world sizes:
//   psdp-run -n 4 -- mp_collectives
// Every rank runs the same matrix (collective x dtype x count x in-place) through the public API and checks
// every element exactly: inputs are small integers, so float sums are exact whatever the order.
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

// The input of rank r at index i: distinct per rank and index, small enough for exact float sums.
int32_t input(int r, size_t i) {
  return static_cast<int32_t>((r + 1) * 1000 + static_cast<int>(i % 991));
}

int32_t sumOverRanks(size_t i) {
  int32_t s = 0;
  for (int r = 0; r < g_nranks; ++r) s += input(r, i);
  return s;
}

template <typename T>
struct Case {
  const char* coll;
  size_t count;  // per-rank count for rs/ag, total for ar
  bool in_place;
  psdp_dtype_t dtype;
};

template <typename T>
std::string describe(const Case<T>& c) {
  return std::string(c.coll) + " count " + std::to_string(c.count) + (c.in_place ? " in-place" : " out-of-place") +
         (c.dtype == PSDP_FLOAT32 ? " float32" : " int32");
}

template <typename T>
bool expectEqual(const T* got, size_t n, size_t first_index, bool reduced, const Case<T>& c, size_t block) {
  for (size_t i = 0; i < n; ++i) {
    size_t index = first_index + i;
    T want = reduced ? static_cast<T>(sumOverRanks(index))
                     : static_cast<T>(input(static_cast<int>(index / block), index % block));
    if (got[i] != want) {
      std::fprintf(stderr, "%s: element %zu is %g, expected %g\n", describe(c).c_str(), index, double(got[i]),
                   double(want));
      return false;
    }
  }
  return true;
}

template <typename T>
void runReduceScatter(psdp_comm_h comm, const Case<T>& c) {
  size_t total = c.count * g_nranks;
  std::vector<T> send(total + 1), recv(c.count + 1);
  for (size_t i = 0; i < total; ++i) send[i] = static_cast<T>(input(g_rank, i));
  T* sendbuf = send.data();
  T* recvbuf = c.in_place ? send.data() + c.count * g_rank : recv.data();
  psdp_status_t s = psdp_reduce_scatter(sendbuf, recvbuf, c.count, c.dtype, PSDP_SUM, comm, nullptr, nullptr);
  g_report.check(s == PSDP_SUCCESS && expectEqual(recvbuf, c.count, c.count * g_rank, true, c, 1),
                 describe(c) + ": " + psdp_status_string(s) + " " + psdp_get_last_error(comm));
}

template <typename T>
void runAllGather(psdp_comm_h comm, const Case<T>& c) {
  size_t total = c.count * g_nranks;
  std::vector<T> send(c.count + 1), recv(total + 1);
  T* recvbuf = recv.data();
  T* sendbuf = c.in_place ? recv.data() + c.count * g_rank : send.data();
  for (size_t i = 0; i < c.count; ++i) sendbuf[i] = static_cast<T>(input(g_rank, i));
  psdp_status_t s = psdp_all_gather(sendbuf, recvbuf, c.count, c.dtype, comm, nullptr, nullptr);
  g_report.check(s == PSDP_SUCCESS && expectEqual(recvbuf, total, 0, false, c, c.count == 0 ? 1 : c.count),
                 describe(c) + ": " + psdp_status_string(s) + " " + psdp_get_last_error(comm));
}

template <typename T>
void runAllReduce(psdp_comm_h comm, const Case<T>& c) {
  std::vector<T> send(c.count + 1), recv(c.count + 1);
  for (size_t i = 0; i < c.count; ++i) send[i] = static_cast<T>(input(g_rank, i));
  T* sendbuf = send.data();
  T* recvbuf = c.in_place ? send.data() : recv.data();
  psdp_status_t s = psdp_all_reduce(sendbuf, recvbuf, c.count, c.dtype, PSDP_SUM, comm, nullptr, nullptr);
  g_report.check(s == PSDP_SUCCESS && expectEqual(recvbuf, c.count, 0, true, c, 1),
                 describe(c) + ": " + psdp_status_string(s) + " " + psdp_get_last_error(comm));
}

template <typename T>
void runMatrix(psdp_comm_h comm, psdp_dtype_t dtype, const std::vector<size_t>& counts) {
  for (size_t count : counts) {
    for (bool in_place : {false, true}) {
      runReduceScatter<T>(comm, {"reduce-scatter", count, in_place, dtype});
      runAllGather<T>(comm, {"all-gather", count, in_place, dtype});
      runAllReduce<T>(comm, {"all-reduce", count, in_place, dtype});
    }
  }
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
  runAllReduce<int32_t>(comm, {"all-reduce after bad input", 1000, false, PSDP_INT32});
}

}  // namespace

int main() {
  psdp_comm_h comm = psdp::mp::initFromEnv(g_report, &g_rank, &g_nranks);
  if (comm == nullptr) return 1;
  psdp_status_t s = PSDP_SUCCESS;
  const std::vector<size_t> counts = {0, 1, 7, 1000, (1u << 20) + 3};
  runMatrix<float>(comm, PSDP_FLOAT32, counts);
  runMatrix<int32_t>(comm, PSDP_INT32, counts);
  runBadInput(comm);
  s = psdp_comm_finalize(comm);
  g_report.check(s == PSDP_SUCCESS,
                 std::string("finalize: ") + psdp_status_string(s) + " " + psdp_get_last_error(comm));
  g_report.check(psdp_comm_destroy(comm) == PSDP_SUCCESS, "destroy");
  return g_report.finish();
}
