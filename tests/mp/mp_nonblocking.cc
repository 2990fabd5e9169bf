// Multi-process tests of nonblocking collectives, requests, broadcast and barrier, run by psdp-run for
// several world sizes (and progress modes): psdp-run -n 4 -- mp_nonblocking
// Integer data, or mp_matrix's exact model for other dtypes, so every element is checked exactly.
#include <psdp/psdp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "mp_matrix_model.h"
#include "mp_report.h"

using psdp::mp::why;

namespace {

int g_rank = 0;
int g_nranks = 1;
psdp::mp::Report g_report;
volatile uint64_t g_sink = 0;  // keeps the polling loop's stand-in computation

using Clock = std::chrono::steady_clock;
constexpr auto kPollLimit = std::chrono::seconds(60);

int32_t value(int r, size_t i, int salt) {
  return static_cast<int32_t>((r + 1) * 1000 + static_cast<int>(i % 991) + salt);
}

int32_t sumOver(size_t i, int salt) {
  int32_t s = 0;
  for (int r = 0; r < g_nranks; ++r) s += value(r, i, salt);
  return s;
}

bool checkSum(const std::vector<int32_t>& got, size_t n, size_t first, int salt) {
  for (size_t i = 0; i < n; ++i) {
    if (got[i] != sumOver(first + i, salt)) return false;
  }
  return true;
}

void runBroadcast(psdp_comm_h comm, int root, size_t count, bool in_place, bool null_sendbuf) {
  std::vector<int32_t> send(count + 1), recv(count + 1, -1);
  for (size_t i = 0; i < count; ++i) send[i] = value(root, i, 7);
  const void* sendbuf = in_place ? static_cast<void*>(recv.data()) : send.data();
  if (in_place && g_rank == root) recv = send;
  if (null_sendbuf && g_rank != root) sendbuf = nullptr;
  psdp_status_t s = psdp_broadcast(sendbuf, recv.data(), count, PSDP_INT32, root, comm, nullptr, nullptr);
  bool ok = s == PSDP_SUCCESS && recv[count] == (in_place && g_rank == root ? 0 : -1);
  for (size_t i = 0; ok && i < count; ++i) ok = recv[i] == value(root, i, 7);
  g_report.check(ok, "broadcast from root " + std::to_string(root) + " count " + std::to_string(count) +
                         (in_place ? " in-place" : " out-of-place") + ": " + why(comm, s));
}

void runBroadcastMatrix(psdp_comm_h comm) {
  for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1000}, size_t{(1u << 20) + 3}}) {
    for (int root = 0; root < g_nranks; ++root) {
      runBroadcast(comm, root, count, false, false);
      runBroadcast(comm, root, count, true, false);
    }
  }
  runBroadcast(comm, g_nranks - 1, 1000, false, /*null_sendbuf=*/true);
  // Another dtype: the broadcast moves bytes, so one 8-byte type checks element sizes.
  std::vector<double> d(333);
  for (size_t i = 0; i < d.size(); ++i) d[i] = g_rank == 0 ? static_cast<double>(i) * 0.5 : -1.0;
  psdp_status_t s = psdp_broadcast(d.data(), d.data(), d.size(), PSDP_FLOAT64, 0, comm, nullptr, nullptr);
  bool ok = s == PSDP_SUCCESS;
  for (size_t i = 0; ok && i < d.size(); ++i) ok = d[i] == static_cast<double>(i) * 0.5;
  g_report.check(ok, "float64 broadcast in place: " + why(comm, s));
}

// Five requests of mixed kinds outstanding at once, waited for in reverse order.
void runMixedOutstanding(psdp_comm_h comm) {
  const size_t n_ar = 1000, n_ag = 7, n_rs = 100003, n_bc = (1u << 20) + 3;
  std::vector<int32_t> ar(n_ar), ag_send(n_ag), ag(n_ag * g_nranks), rs_send(n_rs * g_nranks), rs(n_rs), bc(n_bc);
  for (size_t i = 0; i < n_ar; ++i) ar[i] = value(g_rank, i, 1);
  for (size_t i = 0; i < n_ag; ++i) ag_send[i] = value(g_rank, i, 2);
  for (size_t i = 0; i < rs_send.size(); ++i) rs_send[i] = value(g_rank, i, 3);
  int root = g_nranks / 2;
  for (size_t i = 0; i < n_bc; ++i) bc[i] = g_rank == root ? value(root, i, 4) : 0;
  psdp_request_h req[5] = {};
  psdp_status_t s[5];
  s[0] = psdp_all_reduce(ar.data(), ar.data(), n_ar, PSDP_INT32, PSDP_SUM, comm, nullptr, &req[0]);
  s[1] = psdp_all_gather(ag_send.data(), ag.data(), n_ag, PSDP_INT32, comm, nullptr, &req[1]);
  s[2] = psdp_reduce_scatter(rs_send.data(), rs.data(), n_rs, PSDP_INT32, PSDP_SUM, comm, nullptr, &req[2]);
  s[3] = psdp_broadcast(bc.data(), bc.data(), n_bc, PSDP_INT32, root, comm, nullptr, &req[3]);
  s[4] = psdp_barrier(comm, &req[4]);
  for (int k = 0; k < 5; ++k) g_report.check(s[k] == PSDP_SUCCESS && req[k] != nullptr, "post " + std::to_string(k));
  for (int k = 4; k >= 0; --k) {
    psdp_status_t w = req[k] ? psdp_request_wait(req[k]) : PSDP_ERR_INVALID_ARGUMENT;
    g_report.check(w == PSDP_SUCCESS, "wait " + std::to_string(k) + ": " + why(comm, w));
  }
  g_report.check(checkSum(ar, n_ar, 0, 1), "outstanding all-reduce data");
  bool ag_ok = true;
  for (size_t i = 0; i < ag.size(); ++i) ag_ok = ag_ok && ag[i] == value(static_cast<int>(i / n_ag), i % n_ag, 2);
  g_report.check(ag_ok, "outstanding all-gather data");
  g_report.check(checkSum(rs, n_rs, n_rs * g_rank, 3), "outstanding reduce-scatter data");
  bool bc_ok = true;
  for (size_t i = 0; i < n_bc; ++i) bc_ok = bc_ok && bc[i] == value(root, i, 4);
  g_report.check(bc_ok, "outstanding broadcast data");
  for (auto& r : req) g_report.check(r != nullptr && psdp_request_free(r) == PSDP_SUCCESS, "free");
}

// Reductions of different dtypes and ops (premul-sum included) outstanding at once: each request must keep
// its own kernel, scalar and staging while the others progress. Values come from mp_matrix's exact model.
void runMixedDtypesOutstanding(psdp_comm_h comm) {
  using psdp::mp::Op;
  struct Spec {
    psdp_dtype_t dtype;
    Op op;
    bool scatter;  // reduce-scatter, else all-reduce
    size_t count;
  };
  const Spec specs[] = {{PSDP_FLOAT16, Op::kPremulSum, false, 100003},
                        {PSDP_BFLOAT16, Op::kAvg, true, 1000},
                        {PSDP_INT8, Op::kProd, false, 7},
                        {PSDP_FLOAT64, Op::kMax, true, 100003},
                        {PSDP_UINT64, Op::kMin, false, 1000},
                        {PSDP_INT32, Op::kPremulSum, true, 777}};
  constexpr int kN = sizeof(specs) / sizeof(specs[0]);
  std::vector<unsigned char> send[kN], recv[kN];
  psdp_op_t ops[kN];
  psdp_request_h req[kN] = {};
  for (int k = 0; k < kN; ++k) {
    const Spec& c = specs[k];
    const size_t esz = psdp::mp::dtypeSize(c.dtype), n_in = c.scatter ? c.count * g_nranks : c.count;
    send[k].resize(n_in * esz);
    recv[k].resize(c.count * esz);
    for (size_t i = 0; i < n_in; ++i) {
      psdp::mp::storeValue(c.dtype, psdp::mp::reduceInput(c.dtype, c.op, g_rank, g_nranks, i), &send[k][i * esz]);
    }
    ops[k] = static_cast<psdp_op_t>(c.op);
    if (c.op == Op::kPremulSum) {
      unsigned char scalar[8];
      psdp::mp::storeValue(c.dtype, psdp::mp::premulScalar(c.dtype, g_rank), scalar);
      psdp_status_t s = psdp_op_create_premul_sum(comm, scalar, c.dtype, &ops[k]);
      g_report.check(s == PSDP_SUCCESS, "create premul-sum op: " + why(comm, s));
    }
    psdp_status_t s =
        c.scatter
            ? psdp_reduce_scatter(send[k].data(), recv[k].data(), c.count, c.dtype, ops[k], comm, nullptr, &req[k])
            : psdp_all_reduce(send[k].data(), recv[k].data(), c.count, c.dtype, ops[k], comm, nullptr, &req[k]);
    g_report.check(s == PSDP_SUCCESS && req[k] != nullptr, "post mixed-dtype request " + std::to_string(k));
  }
  for (int k = 0; k < kN; ++k) {
    const Spec& c = specs[k];
    psdp_status_t w = req[k] ? psdp_request_wait(req[k]) : PSDP_ERR_INVALID_ARGUMENT;
    const size_t esz = psdp::mp::dtypeSize(c.dtype), first = c.scatter ? c.count * g_rank : 0;
    size_t bad = c.count;
    for (size_t i = 0; bad == c.count && i < c.count; ++i) {
      double want = psdp::mp::reduceExpected(c.dtype, c.op, g_nranks, first + i);
      if (psdp::mp::loadValue(c.dtype, &recv[k][i * esz]) != want) bad = i;
    }
    std::string what = std::string(c.scatter ? "reduce-scatter " : "all-reduce ") + psdp::mp::dtypeName(c.dtype) + " " +
                       psdp::mp::opName(c.op) + " count " + std::to_string(c.count) + " outstanding with others";
    if (bad != c.count) {
      what += ": element " + std::to_string(bad) + " is " + psdp::mp::formatValue(c.dtype, &recv[k][bad * esz]);
    }
    g_report.check(w == PSDP_SUCCESS && bad == c.count, what + ": " + why(comm, w));
    if (req[k]) g_report.check(psdp_request_free(req[k]) == PSDP_SUCCESS, "free mixed-dtype request");
    if (c.op == Op::kPremulSum) g_report.check(psdp_op_destroy(comm, ops[k]) == PSDP_SUCCESS, "destroy op");
  }
}

// test() alone completes a request: the progress thread, or test itself in caller mode, moves it.
void runTestPolling(psdp_comm_h comm) {
  const size_t n = (1u << 20) + 3;
  std::vector<int32_t> buf(n);
  for (size_t i = 0; i < n; ++i) buf[i] = value(g_rank, i, 5);
  psdp_request_h req = nullptr;
  psdp_status_t s = psdp_all_reduce(buf.data(), buf.data(), n, PSDP_INT32, PSDP_SUM, comm, nullptr, &req);
  g_report.check(s == PSDP_SUCCESS, "post polled all-reduce: " + why(comm, s));
  if (s != PSDP_SUCCESS) return;
  auto limit = Clock::now() + kPollLimit;
  uint64_t polls = 0, work = 0;
  do {
    s = psdp_request_test(req);
    ++polls;
    for (int i = 0; i < 1000; ++i) work += static_cast<uint64_t>(i) * polls;  // the user's "compute"
  } while (s == PSDP_IN_PROGRESS && Clock::now() < limit);
  g_sink = work;
  g_report.check(s == PSDP_SUCCESS && checkSum(buf, n, 0, 5),
                 "polled all-reduce: " + why(comm, s) + " after " + std::to_string(polls) + " polls");
  g_report.check(psdp_request_test(req) == PSDP_SUCCESS, "test of a completed request stays success");
  g_report.check(psdp_request_free(req) == PSDP_SUCCESS, "free polled request");
}

// Rank 0 posts an all-reduce the others post only after rank 0 has seen it pending: the flag file is the
// signal (its path was broadcast first), so wait_timeout and free-while-pending are deterministic.
void runPendingRequest(psdp_comm_h comm) {
  if (g_nranks < 2) return;
  char path[256] = {};
  if (g_rank == 0) std::snprintf(path, sizeof path, "/tmp/psdp_mp_nonblocking_%d_%ld", getpid(), long(time(nullptr)));
  psdp_status_t s = psdp_broadcast(path, path, sizeof path, PSDP_UINT8, 0, comm, nullptr, nullptr);
  g_report.check(s == PSDP_SUCCESS, "broadcast flag path: " + why(comm, s));
  std::vector<int32_t> buf(1000);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = value(g_rank, i, 6);
  psdp_request_h req = nullptr;
  if (g_rank == 0) {
    s = psdp_all_reduce(buf.data(), buf.data(), buf.size(), PSDP_INT32, PSDP_SUM, comm, nullptr, &req);
    g_report.check(s == PSDP_SUCCESS, "post pending all-reduce");
    g_report.check(psdp_request_wait_timeout(req, 0.2) == PSDP_IN_PROGRESS, "wait_timeout of a pending request");
    g_report.check(psdp_request_test(req) == PSDP_IN_PROGRESS, "test of a pending request");
    s = psdp_request_free(req);
    g_report.check(s == PSDP_ERR_INVALID_USAGE && std::strstr(psdp_get_last_error(comm), "in progress") != nullptr,
                   "free of a pending request: " + why(comm, s));
    FILE* flag = std::fopen(path, "w");
    g_report.check(flag != nullptr, "create flag file");
    if (flag) std::fclose(flag);
  } else {
    struct stat st;
    auto limit = Clock::now() + kPollLimit;
    while (stat(path, &st) != 0 && Clock::now() < limit) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    s = psdp_all_reduce(buf.data(), buf.data(), buf.size(), PSDP_INT32, PSDP_SUM, comm, nullptr, &req);
    g_report.check(s == PSDP_SUCCESS, "post all-reduce after the flag");
  }
  s = psdp_request_wait_timeout(req, 60.0);
  g_report.check(s == PSDP_SUCCESS && checkSum(buf, buf.size(), 0, 6), "pending all-reduce completes: " + why(comm, s));
  g_report.check(psdp_request_free(req) == PSDP_SUCCESS, "free completed request");
  s = psdp_request_free(req);
  g_report.check(s == PSDP_ERR_INVALID_USAGE, "double free is invalid usage: " + why(comm, s));
  g_report.check(psdp_request_test(req) == PSDP_ERR_INVALID_USAGE, "test of a freed request is invalid usage");
  s = psdp_barrier(comm, nullptr);
  g_report.check(s == PSDP_SUCCESS, "barrier: " + why(comm, s));
  if (g_rank == 0) std::remove(path);
}

void runBadInput(psdp_comm_h comm) {
  int32_t x[4] = {0};
  psdp_request_h req = nullptr;
  psdp_status_t s = psdp_broadcast(x, x, 4, PSDP_INT32, g_nranks, comm, nullptr, &req);
  g_report.check(
      s == PSDP_ERR_INVALID_ARGUMENT && std::strstr(psdp_get_last_error(comm), "root") != nullptr && req == nullptr,
      "broadcast root out of range: " + why(comm, s));
  s = psdp_broadcast(x, x, 4, PSDP_INT32, -1, comm, nullptr, nullptr);
  g_report.check(s == PSDP_ERR_INVALID_ARGUMENT, "broadcast root -1");
  g_report.check(psdp_request_wait(nullptr) == PSDP_ERR_INVALID_ARGUMENT, "wait on NULL");
  g_report.check(psdp_request_wait_timeout(nullptr, 1.0) == PSDP_ERR_INVALID_ARGUMENT, "wait_timeout on NULL");
  // The communicator still works after the refusals.
  s = psdp_broadcast(x, x, 4, PSDP_INT32, 0, comm, nullptr, nullptr);
  g_report.check(s == PSDP_SUCCESS, "broadcast after bad input: " + why(comm, s));
}

}  // namespace

int main() {
  psdp_comm_h comm = psdp::mp::initFromEnv(g_report, &g_rank, &g_nranks);
  if (comm == nullptr) return 1;
  psdp_status_t s = PSDP_SUCCESS;
  runBroadcastMatrix(comm);
  runMixedOutstanding(comm);
  runMixedDtypesOutstanding(comm);
  runTestPolling(comm);
  runPendingRequest(comm);
  runBadInput(comm);
  s = psdp_barrier(comm, nullptr);
  g_report.check(s == PSDP_SUCCESS, "blocking barrier: " + why(comm, s));
  s = psdp_comm_finalize(comm);
  g_report.check(s == PSDP_SUCCESS, "finalize: " + why(comm, s));
  g_report.check(psdp_comm_destroy(comm) == PSDP_SUCCESS, "destroy");
  return g_report.finish();
}
