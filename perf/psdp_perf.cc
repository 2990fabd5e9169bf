// psdp-perf: collective bandwidth in the manner of nccl-tests, over the public C API only.
//
//   psdp-run -n 2 -- psdp-perf ar -b 1M -e 256M -f 2 -c 1
//
// Columns, busbw factors and the closing "# Avg bus bandwidth" line follow nccl-tests, so results can be
// compared side by side. Buffers are allocated and touched once at the largest size before anything is
// timed: on machines where first touch of fresh pages is slow, timing it would measure the kernel.
#include <psdp/psdp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "perf_options.h"

namespace {

[[noreturn]] void fail(psdp_comm_h comm, const char* what, psdp_status_t status) {
  std::fprintf(stderr, "psdp-perf: %s failed: %s: %s\n", what, psdp_status_string(status), psdp_get_last_error(comm));
  std::exit(1);
}

#define PERF_CHECK(comm, call)                                         \
  do {                                                                 \
    psdp_status_t perf_status_ = (call);                               \
    if (perf_status_ != PSDP_SUCCESS) fail(comm, #call, perf_status_); \
  } while (0)

struct Buffers {
  std::vector<char> send;
  std::vector<char> recv;
};

// Element i of rank r's send data: small integers, so sums over any number of ranks are exact in float.
double inputValue(int rank, size_t i) {
  return static_cast<double>((rank + 1) * static_cast<int>(i % 97 + 1));
}

template <typename T>
void fillInput(T* data, size_t count, int rank, size_t first_index) {
  for (size_t i = 0; i < count; ++i) data[i] = static_cast<T>(inputValue(rank, first_index + i));
}

// Expected output element `i` of the whole result vector (all-reduce / all-gather index space).
double expected(psdp::perf::Collective coll, int nranks, size_t count_per_rank, size_t i) {
  using psdp::perf::Collective;
  switch (coll) {
    case Collective::kAllGather:
      // Rank r contributed elements [r*count, (r+1)*count), filled from its own index 0.
      return inputValue(static_cast<int>(i / count_per_rank), i % count_per_rank);
    case Collective::kReduceScatter:
    case Collective::kAllReduce: {
      double sum = 0;
      for (int r = 0; r < nranks; ++r) sum += inputValue(r, i);
      return sum;
    }
  }
  return 0;
}

struct Sizes {
  size_t send_count;  // elements in sendbuf
  size_t recv_count;  // elements in recvbuf
  size_t count;       // the count argument of the call
};

Sizes sizesFor(psdp::perf::Collective coll, size_t total_count, int nranks) {
  using psdp::perf::Collective;
  size_t per_rank = total_count / static_cast<size_t>(nranks);
  switch (coll) {
    case Collective::kAllReduce: return {total_count, total_count, total_count};
    case Collective::kReduceScatter: return {per_rank * nranks, per_rank, per_rank};
    case Collective::kAllGather: return {per_rank, per_rank * nranks, per_rank};
  }
  return {0, 0, 0};
}

psdp_status_t runOnce(const psdp::perf::Options& o, psdp_comm_h comm, const Sizes& s, char* send, char* recv) {
  using psdp::perf::Collective;
  switch (o.collective) {
    case Collective::kAllReduce: return psdp_all_reduce(send, recv, s.count, o.dtype, o.op, comm, nullptr, nullptr);
    case Collective::kReduceScatter:
      return psdp_reduce_scatter(send, recv, s.count, o.dtype, o.op, comm, nullptr, nullptr);
    case Collective::kAllGather: return psdp_all_gather(send, recv, s.count, o.dtype, comm, nullptr, nullptr);
  }
  return PSDP_ERR_INVALID_ARGUMENT;
}

// Fills the send side (for in-place: the rank's piece inside recvbuf) with the rank's input.
void prepareInput(const psdp::perf::Options& o, const Sizes& s, int rank, char* send) {
  if (o.dtype == PSDP_FLOAT32) {
    fillInput(reinterpret_cast<float*>(send), s.send_count, rank, 0);
  } else {
    fillInput(reinterpret_cast<int32_t*>(send), s.send_count, rank, 0);
  }
}

// Counts result elements that differ from the exact expectation.
long long countWrong(const psdp::perf::Options& o, const Sizes& s, int rank, int nranks, const char* recv) {
  using psdp::perf::Collective;
  long long wrong = 0;
  size_t first = o.collective == Collective::kReduceScatter ? s.recv_count * rank : 0;
  for (size_t i = 0; i < s.recv_count; ++i) {
    double want = expected(o.collective, nranks, s.count, first + i);
    double got =
        o.dtype == PSDP_FLOAT32 ? reinterpret_cast<const float*>(recv)[i] : reinterpret_cast<const int32_t*>(recv)[i];
    wrong += got != want;
  }
  return wrong;
}

struct Measurement {
  double time_us = 0;
  long long wrong = 0;
};

// Times `iters` back-to-back calls after `warmup` untimed ones; the slowest rank's time counts.
Measurement measure(const psdp::perf::Options& o, psdp_comm_h comm, const Sizes& s, int rank, int nranks, bool in_place,
                    Buffers& b) {
  size_t elem = 4;
  char* recv = b.recv.data();
  char* send = in_place ? recv + (o.collective == psdp::perf::Collective::kAllGather ? s.count * rank * elem : 0)
                        : b.send.data();
  if (in_place && o.collective == psdp::perf::Collective::kReduceScatter) {
    // In-place reduce-scatter reduces the full vector held in recvbuf; recvbuf is sendbuf + rank*count.
    send = b.send.data();
    recv = send + s.count * rank * elem;
  }
  for (int i = 0; i < o.warmup; ++i) PERF_CHECK(comm, runOnce(o, comm, s, send, recv));
  // Line the ranks up so that the clock starts together everywhere.
  int32_t token = 0, token_sum = 0;
  PERF_CHECK(comm, psdp_all_reduce(&token, &token_sum, 1, PSDP_INT32, PSDP_SUM, comm, nullptr, nullptr));
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < o.iters; ++i) PERF_CHECK(comm, runOnce(o, comm, s, send, recv));
  auto t1 = std::chrono::steady_clock::now();
  float my_us = static_cast<float>(std::chrono::duration<double, std::micro>(t1 - t0).count() / o.iters);
  std::vector<float> all_us(nranks);
  PERF_CHECK(comm, psdp_all_gather(&my_us, all_us.data(), 1, PSDP_FLOAT32, comm, nullptr, nullptr));
  Measurement m;
  m.time_us = *std::max_element(all_us.begin(), all_us.end());
  if (o.check) {
    prepareInput(o, s, rank, send);
    PERF_CHECK(comm, runOnce(o, comm, s, send, recv));
    int32_t wrong = static_cast<int32_t>(std::min<long long>(countWrong(o, s, rank, nranks, recv), INT32_MAX));
    int32_t total = 0;
    PERF_CHECK(comm, psdp_all_reduce(&wrong, &total, 1, PSDP_INT32, PSDP_SUM, comm, nullptr, nullptr));
    m.wrong = total;
  }
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  psdp::perf::Options o;
  std::string error;
  if (!psdp::perf::parseOptions(argc, argv, &o, &error)) {
    std::fprintf(stderr, "psdp-perf: %s\n\n%s", error.c_str(), psdp::perf::usage());
    return 2;
  }
  if (o.help) {
    std::fputs(psdp::perf::usage(), stdout);
    return 0;
  }
  psdp_comm_h comm = nullptr;
  PERF_CHECK(nullptr, psdp_comm_init_from_env(nullptr, &comm));
  int rank = 0, nranks = 1;
  PERF_CHECK(comm, psdp_comm_rank(comm, &rank));
  PERF_CHECK(comm, psdp_comm_size(comm, &nranks));

  const size_t elem = 4;
  Buffers b;
  // Touch every page now (vector value-initialises), outside any timed region.
  b.send.assign(o.max_bytes + elem * nranks, 0);
  b.recv.assign(o.max_bytes + elem * nranks, 0);

  psdp::perf::Report report(o, nranks, rank == 0 ? stdout : nullptr);
  report.header();
  for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes = psdp::perf::nextSize(o, bytes)) {
    Sizes s = sizesFor(o.collective, bytes / elem, nranks);
    prepareInput(o, s, rank, b.send.data());
    Measurement out_of_place = measure(o, comm, s, rank, nranks, false, b);
    Measurement in_place = measure(o, comm, s, rank, nranks, true, b);
    report.row(s.count, out_of_place.time_us, out_of_place.wrong, in_place.time_us, in_place.wrong);
    if (bytes == o.max_bytes) break;
  }
  int failures = report.footer();
  PERF_CHECK(comm, psdp_comm_finalize(comm));
  PERF_CHECK(nullptr, psdp_comm_destroy(comm));
  return failures == 0 ? 0 : 1;
}
