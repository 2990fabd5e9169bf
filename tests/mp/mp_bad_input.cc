// Bad input on several ranks: a bad call on one rank must be refused before anything is sent, so that the
// other ranks, already waiting in the next correct all-reduce, neither hang nor fail nor see wrong data.
//   - every bad call of bad_input_cases.h, made by one rank in turn (the others go straight on), each
//     followed by a correct all-reduce on every rank, checked exactly;
//   - a pending request: freeing it is invalid usage, test and wait with timeout say in progress; once
//     the peers join it completes, a second wait returns its status again, and a freed one is refused;
//   - a request still pending when its communicator is destroyed completes with invalid usage, and every
//     call on the destroyed handle is refused.
// The request cases run on a child communicator (psdp_comm_split) so that the peers can wait in a barrier
// of the parent, which rank 0 joins only after its checks: the request is pending for certain meanwhile.
#include <psdp/psdp.h>

#include <cstdint>
#include <string>
#include <vector>

#include "mp_report.h"
#include "unit/api/bad_input_cases.h"

using psdp::mp::why;

namespace {

void checkAll(psdp::mp::Report& report, const std::vector<std::string>& failures, const std::string& what) {
  report.check(failures.empty(), what + (failures.empty() ? "" : ": " + failures.front()));
  for (size_t i = 1; i < failures.size(); ++i) report.check(false, what + ": " + failures[i]);
}

void badCallsOneRankAtATime(psdp_comm_h comm, int rank, int nranks, psdp::mp::Report& report) {
  psdp::testing::BadInputArena arena(nranks);
  std::vector<psdp::testing::BadCall> calls = psdp::testing::collectiveBadCalls(comm, rank, nranks, arena);
  report.check(calls.size() >= 4u * 2 * 10, "the table of bad calls has " + std::to_string(calls.size()) + " entries");
  int round = 0;
  for (size_t i = 0; i < calls.size(); ++i) {
    // Every rank builds the same table, so the ranks agree on who makes call i.
    if (static_cast<int>(i % static_cast<size_t>(nranks)) == rank) {
      std::string problem = psdp::testing::checkBadCall(calls[i], comm);
      report.check(problem.empty(), problem);
    }
    std::string problem = psdp::testing::checkAllReduceWorks(comm, rank, nranks, ++round);
    report.check(problem.empty(), problem + " (after rank " + std::to_string(i % static_cast<size_t>(nranks)) +
                                      " made " + calls[i].name + ")");
  }
}

psdp_status_t parentBarrier(psdp_comm_h parent, psdp::mp::Report& report, const std::string& what) {
  psdp_status_t s = psdp_barrier(parent, nullptr);
  report.check(s == PSDP_SUCCESS, "parent barrier " + what + ": " + why(parent, s));
  return s;
}

void pendingRequest(psdp_comm_h parent, psdp_comm_h child, int rank, int nranks, psdp::mp::Report& report) {
  std::vector<int32_t> data(1000, rank + 1);
  const int32_t sum = nranks * (nranks + 1) / 2;
  if (rank == 0) {
    psdp_request_h request = nullptr;
    psdp_status_t s =
        psdp_all_reduce(data.data(), data.data(), data.size(), PSDP_INT32, PSDP_SUM, child, nullptr, &request);
    report.check(s == PSDP_SUCCESS, "post: " + why(child, s));
    if (s != PSDP_SUCCESS) return;
    // The peers are in the parent barrier below: the request cannot complete before rank 0 joins it.
    s = psdp_request_free(request);
    std::string error = psdp_get_last_error(child);
    report.check(s == PSDP_ERR_INVALID_USAGE && error.find("in progress") != std::string::npos,
                 "freeing a pending request is invalid usage: " + why(child, s));
    s = psdp_request_test(request);
    report.check(s == PSDP_IN_PROGRESS, "test of a pending request: " + why(child, s));
    s = psdp_request_wait_timeout(request, 0.01);
    report.check(s == PSDP_IN_PROGRESS, "wait with timeout of a pending request: " + why(child, s));
    parentBarrier(parent, report, "before the peers join");
    s = psdp_request_wait(request);
    report.check(s == PSDP_SUCCESS && data.front() == sum && data.back() == sum,
                 "the request completes once the peers join: " + why(child, s));
    s = psdp_request_wait(request);
    report.check(s == PSDP_SUCCESS, "a second wait returns the status again: " + why(child, s));
    s = psdp_request_free(request);
    report.check(s == PSDP_SUCCESS, "free: " + why(child, s));
    checkAll(report, psdp::testing::checkFreedRequest(request), "freed request");
  } else {
    parentBarrier(parent, report, "before joining rank 0's request");
    psdp_status_t s =
        psdp_all_reduce(data.data(), data.data(), data.size(), PSDP_INT32, PSDP_SUM, child, nullptr, nullptr);
    report.check(s == PSDP_SUCCESS && data.front() == sum && data.back() == sum,
                 "all-reduce matching rank 0's request: " + why(child, s));
  }
  std::string problem = psdp::testing::checkAllReduceWorks(child, rank, nranks, 1);
  report.check(problem.empty(), "child after the request checks: " + problem);
}

// Rank 0 destroys the child under a request the peers never join; they destroy theirs once it is done.
// Destroying under a pending request tells the peers that the child failed, which fails what they still
// have in flight on it: the barrier first lets every rank finish the checks before.
void destroyUnderPendingRequest(psdp_comm_h parent, psdp_comm_h child, int rank, psdp::mp::Report& report) {
  parentBarrier(parent, report, "before rank 0 destroys the child");
  if (rank == 0) {
    std::vector<int32_t> data(1000, 1);
    psdp_request_h request = nullptr;
    psdp_status_t s =
        psdp_all_reduce(data.data(), data.data(), data.size(), PSDP_INT32, PSDP_SUM, child, nullptr, &request);
    report.check(s == PSDP_SUCCESS, "post before destroy: " + why(child, s));
    report.check(psdp_comm_destroy(child) == PSDP_SUCCESS, "destroy under a pending request");
    if (s == PSDP_SUCCESS) {
      s = psdp_request_wait(request);
      std::string error = psdp_get_last_error(nullptr);
      report.check(
          s == PSDP_ERR_INVALID_USAGE && error.find("destroyed") != std::string::npos,
          "the pending request completes with invalid usage: " + std::string(psdp_status_string(s)) + " " + error);
      report.check(psdp_request_free(request) == PSDP_SUCCESS, "free the request of a destroyed communicator");
    }
    // No communicator is made in between, so `child` cannot be reused by a new one.
    checkAll(report, psdp::testing::checkDeadHandle(child, /*finalized=*/false), "destroyed child");
    parentBarrier(parent, report, "after rank 0 destroyed the child");
  } else {
    parentBarrier(parent, report, "while rank 0 destroys the child");
    report.check(psdp_comm_destroy(child) == PSDP_SUCCESS, "destroy the child");
  }
}

}  // namespace

int main() {
  psdp::mp::Report report;
  int rank = 0, nranks = 1;
  psdp_comm_h parent = psdp::mp::initFromEnv(report, &rank, &nranks);
  if (parent == nullptr) return 1;
  badCallsOneRankAtATime(parent, rank, nranks, report);

  if (nranks > 1) {
    psdp_comm_h child = nullptr;
    psdp_status_t s = psdp_comm_split(parent, 0, rank, nullptr, &child);
    report.check(s == PSDP_SUCCESS && child != nullptr, "split: " + why(parent, s));
    if (child != nullptr) {
      pendingRequest(parent, child, rank, nranks, report);
      destroyUnderPendingRequest(parent, child, rank, report);
    }
  }
  std::string problem = psdp::testing::checkAllReduceWorks(parent, rank, nranks, 0);
  report.check(problem.empty(), "parent at the end: " + problem);
  psdp_status_t s = psdp_comm_finalize(parent);
  report.check(s == PSDP_SUCCESS, "finalize: " + why(parent, s));
  report.check(psdp_comm_destroy(parent) == PSDP_SUCCESS, "destroy");
  return report.finish();
}
