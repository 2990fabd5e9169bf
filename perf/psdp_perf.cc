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
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "host_buffer.h"
#include "perf_data.h"
#include "perf_options.h"
#include "psdp_perf_step.h"

namespace {

using psdp::perf::Collective;
using psdp::perf::Options;
using psdp::perf::Reduction;

constexpr int kExitWrong = 1;
constexpr int kExitUnsupported = 3;
constexpr int kExitBelowGate = 4;

[[noreturn]] void fail(psdp_comm_h comm, const char* what, psdp_status_t status) {
  std::fprintf(stderr, "psdp-perf: %s failed: %s: %s\n", what, psdp_status_string(status), psdp_get_last_error(comm));
  // A failed communicator is destroyed at once (its peers are not waited for).
  if (comm != nullptr) (void)psdp_comm_destroy(comm);
  std::exit(kExitWrong);
}

#define PERF_CHECK(comm, call)                                         \
  do {                                                                 \
    psdp_status_t perf_status_ = (call);                               \
    if (perf_status_ != PSDP_SUCCESS) fail(comm, #call, perf_status_); \
  } while (0)

// One (collective, dtype, op) combination being measured.
struct Call {
  Collective coll;
  Reduction reduction;
  psdp_dtype_t dtype;
  psdp_op_t op;  // a premul-sum op made for this dtype, or the plain op
  int root;
  bool blocking;
  psdp_comm_h comm;
  int rank, nranks;
};

// Element counts of one size, in nccl-tests' terms: `bytes` is the whole vector.
struct Geometry {
  size_t count;       // the count argument of the call
  size_t send_count;  // elements in sendbuf
  size_t recv_count;  // elements in recvbuf
  size_t total;       // elements of the whole vector, the "count" column
};

Geometry geometryFor(Collective c, size_t bytes, size_t elem, int nranks) {
  size_t n = static_cast<size_t>(nranks);
  size_t all = bytes / elem, per = all / n;
  switch (c) {
    case Collective::kAllReduce:
    case Collective::kBroadcast:
    case Collective::kReduce:
    case Collective::kSendRecv: return {all, all, all, all};
    case Collective::kReduceScatter:
    case Collective::kScatter: return {per, per * n, per, per * n};
    case Collective::kAllGather:
    case Collective::kGather: return {per, per, per * n, per * n};
    case Collective::kAllToAll: return {per, per * n, per * n, per * n};
  }
  return {0, 0, 0, 0};
}

// Requests one call makes: send/recv is a receive from the rank before and a send to the rank after.
constexpr int kMaxRequestsPerCall = 2;
int requestsPerCall(Collective c) {
  return c == Collective::kSendRecv ? 2 : 1;
}

// Posts one call, nonblocking into req[0, requestsPerCall) or, with req NULL, blocking.
psdp_status_t post(const Call& c, size_t count, const void* send, void* recv, psdp_request_h* req) {
  switch (c.coll) {
    case Collective::kAllReduce: return psdp_all_reduce(send, recv, count, c.dtype, c.op, c.comm, nullptr, req);
    case Collective::kReduceScatter: return psdp_reduce_scatter(send, recv, count, c.dtype, c.op, c.comm, nullptr, req);
    case Collective::kAllGather: return psdp_all_gather(send, recv, count, c.dtype, c.comm, nullptr, req);
    case Collective::kBroadcast: return psdp_broadcast(send, recv, count, c.dtype, c.root, c.comm, nullptr, req);
    case Collective::kReduce: return psdp_reduce(send, recv, count, c.dtype, c.op, c.root, c.comm, nullptr, req);
    case Collective::kGather: return psdp_gather(send, recv, count, c.dtype, c.root, c.comm, nullptr, req);
    case Collective::kScatter: return psdp_scatter(send, recv, count, c.dtype, c.root, c.comm, nullptr, req);
    case Collective::kAllToAll: return psdp_all_to_all(send, recv, count, c.dtype, c.comm, nullptr, req);
    case Collective::kSendRecv: {
      const int left = (c.rank + c.nranks - 1) % c.nranks, right = (c.rank + 1) % c.nranks;
      psdp_status_t st = psdp_recv(recv, count, c.dtype, left, c.comm, nullptr, &req[0]);
      return st == PSDP_SUCCESS ? psdp_send(send, count, c.dtype, right, c.comm, nullptr, &req[1]) : st;
    }
  }
  return PSDP_ERR_INVALID_ARGUMENT;
}

// Waits for and frees `n` requests, one psdp_request_wait each; the first error.
psdp_status_t waitEach(psdp_request_h* req, int n) {
  psdp_status_t first = PSDP_SUCCESS;
  for (int k = 0; k < n; ++k) {
    psdp_status_t waited = psdp_request_wait(req[k]);
    psdp_status_t freed = psdp_request_free(req[k]);
    if (first == PSDP_SUCCESS) first = waited != PSDP_SUCCESS ? waited : freed;
  }
  return first;
}

// Send/recv is always posted nonblocking: on a ring, blocking sends would wait for each other.
psdp_status_t runOnce(const Call& c, size_t count, const void* send, void* recv) {
  if (c.blocking && c.coll != Collective::kSendRecv) return post(c, count, send, recv, nullptr);
  psdp_request_h req[kMaxRequestsPerCall] = {};
  psdp_status_t st = post(c, count, send, recv, req);
  if (st != PSDP_SUCCESS) return st;
  return waitEach(req, requestsPerCall(c.coll));
}

// Host buffers, 2 MiB aligned (so every dtype is), sized in 8-byte words.
struct Buffers {
  psdp::perf::HostBuffer send, recv;
  char* s() const { return send.data(); }
  char* r() const { return recv.data(); }
};

// sendbuf and recvbuf of one placement; in-place follows NCCL (psdp.h).
struct Placement {
  char* send;
  char* recv;
  size_t input_first;   // index of sendbuf[0] in the collective's index space
  size_t result_first;  // index of recvbuf[0] in the result's index space
};

Placement placementFor(const Call& c, const Geometry& g, const Buffers& b, bool in_place) {
  size_t elem = psdp::perf::dtypeBytes(c.dtype);
  size_t mine = g.count * static_cast<size_t>(c.rank);
  switch (c.coll) {
    case Collective::kAllReduce:
    case Collective::kBroadcast:
    case Collective::kReduce: return {in_place ? b.r() : b.s(), b.r(), 0, 0};
    case Collective::kReduceScatter:
    case Collective::kScatter: return {b.s(), in_place ? b.s() + mine * elem : b.r(), 0, mine};
    case Collective::kAllGather:
    case Collective::kGather: return {in_place ? b.r() + mine * elem : b.s(), b.r(), mine, 0};
    case Collective::kAllToAll:
    case Collective::kSendRecv: return {b.s(), b.r(), 0, 0};
  }
  return {b.s(), b.r(), 0, 0};
}

class Lineup {
 public:
  explicit Lineup(psdp_comm_h comm) : comm_(comm) {}
  void operator()() const { PERF_CHECK(comm_, psdp_barrier(comm_, nullptr)); }

 private:
  psdp_comm_h comm_;
};

struct Measurement {
  double time_us = 0;
  long long wrong = 0;
};

// One iteration: a call, or with -m N, N nonblocking calls on the buffers' N disjoint slices, posted back to
// back and then waited for.
psdp_status_t runIteration(const Options& o, const Call& c, const Geometry& g, const Placement& p, size_t slice,
                           std::vector<psdp_request_h>& requests) {
  if (o.agg == 1) return runOnce(c, g.count, p.send, p.recv);
  const int per_call = requestsPerCall(c.coll);
  psdp_status_t st = PSDP_SUCCESS;
  int posted = 0;
  for (; posted < o.agg; ++posted) {
    const size_t at = static_cast<size_t>(posted) * slice;
    st = post(c, g.count, p.send + at, p.recv + at, &requests[static_cast<size_t>(posted * per_call)]);
    if (st != PSDP_SUCCESS) break;
  }
  psdp_status_t waited = PSDP_SUCCESS;
  if (o.wait_each) {
    waited = waitEach(requests.data(), posted * per_call);
  } else {
    waited = psdp_request_wait_all(requests.data(), static_cast<size_t>(posted * per_call));
    for (int k = 0; k < posted * per_call; ++k) {
      const psdp_status_t freed = psdp_request_free(requests[static_cast<size_t>(k)]);
      if (waited == PSDP_SUCCESS) waited = freed;
    }
  }
  return st != PSDP_SUCCESS ? st : waited;
}

// Times `iters` iterations after `warmup` untimed ones; the time per call (an iteration is -m calls) of the
// slowest rank counts. With -c, one more call on fresh input (the first slice) is verified exactly.
Measurement measure(const Options& o, const Call& c, const Lineup& lineup, const Geometry& g, const Buffers& b,
                    size_t slice, bool in_place) {
  Placement p = placementFor(c, g, b, in_place);
  std::vector<psdp_request_h> requests(static_cast<size_t>(o.agg * requestsPerCall(c.coll)));
  auto iterate = [&] {
    psdp_status_t st = runIteration(o, c, g, p, slice, requests);
    if (st == PSDP_SUCCESS) return;
    char what[160];
    std::snprintf(what, sizeof(what), "%s of %zu %s elements (%s, %s)", psdp::perf::collectiveName(c.coll), g.total,
                  psdp::perf::dtypeName(c.dtype),
                  psdp::perf::reduces(c.coll) ? psdp::perf::reductionName(c.reduction) : "no reduction",
                  in_place ? "in place" : "out of place");
    fail(c.comm, what, st);
  };
  for (int i = 0; i < o.warmup; ++i) iterate();
  lineup();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < o.iters; ++i) iterate();
  auto t1 = std::chrono::steady_clock::now();
  float my_us = static_cast<float>(std::chrono::duration<double, std::micro>(t1 - t0).count() / o.iters / o.agg);
  std::vector<float> all_us(static_cast<size_t>(c.nranks));
  PERF_CHECK(c.comm, psdp_all_gather(&my_us, all_us.data(), 1, PSDP_FLOAT32, c.comm, nullptr, nullptr));
  Measurement m;
  m.time_us = *std::max_element(all_us.begin(), all_us.end());
  if (!o.check) return m;
  // Garbage first, then the input: a call that leaves recvbuf alone cannot pass on stale results.
  // In place, the input written second overwrites the garbage wherever the two buffers share memory.
  psdp::perf::fillGarbage(c.dtype, g.recv_count, p.recv);
  psdp::perf::fillInput(c.coll, c.reduction, c.dtype, c.rank, c.root, p.input_first, g.send_count, p.send);
  PERF_CHECK(c.comm, runOnce(c, g.count, p.send, p.recv));
  // The reduce and the gather write the root's recvbuf only.
  const bool root_only = c.coll == Collective::kReduce || c.coll == Collective::kGather;
  const size_t checked = root_only && c.rank != c.root ? 0 : g.recv_count;
  long long mine = psdp::perf::countWrong(c.coll, c.reduction, c.dtype, c.nranks, c.rank, c.root, g.count,
                                          p.result_first, checked, p.recv);
  int32_t wrong = static_cast<int32_t>(std::min<long long>(mine, INT32_MAX / c.nranks)), total = 0;
  PERF_CHECK(c.comm, psdp_all_reduce(&wrong, &total, 1, PSDP_INT32, PSDP_SUM, c.comm, nullptr, nullptr));
  m.wrong = total;
  return m;
}

// Makes the psdp op of `r` for `dtype`; false with the reason when this build cannot.
bool makeOp(psdp_comm_h comm, Reduction r, psdp_dtype_t dtype, psdp_op_t* op, std::string* why) {
  static const psdp_op_t kPlain[] = {PSDP_SUM, PSDP_PROD, PSDP_MIN, PSDP_MAX, PSDP_AVG};
  if (r != Reduction::kPremulSum) {
    *op = kPlain[static_cast<int>(r)];
    return true;
  }
  uint64_t scalar = 0;
  psdp::perf::premulScalar(dtype, &scalar);
  psdp_status_t st = psdp_op_create_premul_sum(comm, &scalar, dtype, op);
  if (st == PSDP_SUCCESS) return true;
  if (st != PSDP_ERR_UNSUPPORTED) fail(comm, "psdp_op_create_premul_sum", st);
  *why = psdp_get_last_error(comm);
  return false;
}

// Runs every size of one combination; false when the build does not support it (reported, not fatal).
void runCombination(const Options& o, Call c, const Lineup& lineup, const Buffers& b, size_t buf_bytes, size_t slice,
                    psdp::perf::Report& report) {
  const char* redop = psdp::perf::reduces(c.coll) ? psdp::perf::reductionName(c.reduction) : "none";
  std::string why;
  if (!makeOp(c.comm, c.reduction, c.dtype, &c.op, &why)) {
    report.unsupported(c.dtype, redop, why);
    return;
  }
  size_t elem = psdp::perf::dtypeBytes(c.dtype);
  // Valid input everywhere, touching every page, before anything is timed.
  psdp::perf::fillInput(c.coll, c.reduction, c.dtype, c.rank, c.root, 0, buf_bytes / elem, b.s());
  psdp::perf::fillInput(c.coll, c.reduction, c.dtype, c.rank, c.root, 0, buf_bytes / elem, b.r());
  // A one-element-per-rank probe: an unsupported combination is reported by every rank alike (psdp validates
  // locally), so all ranks skip it together.
  Geometry probe = geometryFor(c.coll, elem * static_cast<size_t>(c.nranks), elem, c.nranks);
  psdp_status_t st = runOnce(c, probe.count, b.s(), b.r());
  if (st == PSDP_ERR_UNSUPPORTED) {
    std::string msg = psdp_get_last_error(c.comm);
    if (msg.empty()) msg = c.blocking ? "the collective is not in the loaded library" : "no nonblocking requests";
    report.unsupported(c.dtype, redop, msg);
  } else if (st != PSDP_SUCCESS) {
    fail(c.comm, "probe call", st);
  } else {
    int root = psdp::perf::rooted(c.coll) ? c.root : -1;
    for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes = psdp::perf::nextSize(o, bytes)) {
      Geometry g = geometryFor(c.coll, bytes, elem, c.nranks);
      Measurement oop = measure(o, c, lineup, g, b, slice, false);
      Measurement ip = psdp::perf::hasInPlace(c.coll) ? measure(o, c, lineup, g, b, slice, true) : Measurement{};
      report.row(g.total, c.dtype, redop, root, oop.time_us, oop.wrong, ip.time_us, ip.wrong);
    }
  }
  if (c.reduction == Reduction::kPremulSum) {
    PERF_CHECK(c.comm, psdp_op_destroy(c.comm, c.op));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "step") == 0) return psdp::perf::runStepBenchmark(argc, argv, 2);
  Options o;
  std::string error;
  if (!psdp::perf::parseOptions(argc, argv, &o, &error)) {
    // One line, not the whole usage: under a launcher every rank prints it.
    std::fprintf(stderr, "psdp-perf: %s (psdp-perf --help lists the options)\n", error.c_str());
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
  if (o.root >= nranks) {
    if (rank == 0) std::fprintf(stderr, "psdp-perf: -r %d: the root must be below the %d ranks\n", o.root, nranks);
    psdp_comm_destroy(comm);
    return 2;
  }

  // Room for the largest size plus one element per rank for each dtype's probe call, once per call in flight
  // (-m), each slice starting on a page.
  const size_t slice = (o.max_bytes + 8 * static_cast<size_t>(nranks) + 4095) / 4096 * 4096;
  size_t buf_bytes = slice * static_cast<size_t>(o.agg);
  Buffers b{{buf_bytes, o.huge_pages, o.shared_buffers}, {buf_bytes, o.huge_pages, o.shared_buffers}};
  if (b.s() == nullptr || b.r() == nullptr) {
    std::fprintf(stderr, "psdp-perf: rank %d: cannot map 2 x %zu bytes of buffers\n", rank, buf_bytes);
    psdp_comm_destroy(comm);
    return 1;
  }

  Lineup lineup(comm);
  psdp::perf::Report report(o, nranks, rank == 0 ? stdout : nullptr);
  report.header();
  // As nccl-tests: every dtype, then every op, then every size.
  for (psdp_dtype_t dtype : o.dtypes) {
    for (Reduction r : o.ops) {
      Call c{o.collective, r, dtype, PSDP_SUM, o.root, o.blocking, comm, rank, nranks};
      runCombination(o, c, lineup, b, buf_bytes, slice, report);
    }
  }
  bool json_ok = report.footer();
  PERF_CHECK(comm, psdp_comm_finalize(comm));
  PERF_CHECK(nullptr, psdp_comm_destroy(comm));
  if (report.wrong() != 0 || !json_ok) return kExitWrong;
  if (report.unsupportedCount() > 0) return kExitUnsupported;
  // Every rank holds the same rows (times are the slowest rank's), so every rank exits alike.
  return report.belowGate().empty() ? 0 : kExitBelowGate;
}
