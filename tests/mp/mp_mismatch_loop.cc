// The mismatch scenarios again and again, with nothing between the calls: operation #0 agrees on every
// rank, #1 differs on the last rank (another count, dtype, op or kind, in turn), and the ranks go straight
// from #0 to #1, so that #1's disagreement is found while #0 may still run on a slower rank. Every rank
// must return success from #0 and PSDP_ERR_MISMATCH from #1, every time, whatever the timing; with
// --destroy-at-once the last rank destroys its communicator as soon as #1 fails, and the others must still
// get the mismatch, not the echo of its teardown. With --own-context each communicator has a transport of
// its own (split_share = 0), so that destroying it closes its UCX endpoints and shared memory, as
// destroying a world communicator does.
//   mp_mismatch_loop ITERATIONS [--destroy-at-once] [--own-context] [--count=N]   (N: elements of #0, 4096
//   by default)
#include <psdp/psdp.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mp_report.h"

using psdp::mp::why;

namespace {

// What the last rank calls as #1 instead of the all-reduce of `count` the others call.
psdp_status_t oddCall(int kind, size_t count, std::vector<int32_t>& send, std::vector<int32_t>& recv,
                      psdp_comm_h comm) {
  if (kind % 4 == 0) {
    return psdp_all_reduce(send.data(), recv.data(), count - 1, PSDP_INT32, PSDP_SUM, comm, nullptr, nullptr);
  }
  if (kind % 4 == 1) {
    return psdp_all_reduce(send.data(), recv.data(), count, PSDP_FLOAT32, PSDP_SUM, comm, nullptr, nullptr);
  }
  if (kind % 4 == 2) {
    return psdp_all_reduce(send.data(), recv.data(), count, PSDP_INT32, PSDP_MAX, comm, nullptr, nullptr);
  }
  return psdp_all_gather(send.data(), recv.data(), count / 8, PSDP_INT32, comm, nullptr, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  psdp::mp::Report report;
  int rank = 0, nranks = 1;
  psdp_comm_h parent = psdp::mp::initFromEnv(report, &rank, &nranks);
  if (parent == nullptr) return 1;
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 0;
  bool destroy_at_once = false;
  psdp_config_t config = PSDP_CONFIG_INITIALIZER;
  size_t count = 4096;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--destroy-at-once") == 0) destroy_at_once = true;
    if (std::strcmp(argv[i], "--own-context") == 0) config.split_share = 0;
    if (std::strncmp(argv[i], "--count=", 8) == 0) count = std::strtoull(argv[i] + 8, nullptr, 10);
  }
  if (iterations <= 0 || count < 8) {
    std::fprintf(stderr, "usage: mp_mismatch_loop ITERATIONS [--destroy-at-once] [--own-context] [--count=N >= 8]\n");
    return 2;
  }
  const bool odd = rank == nranks - 1;
  std::vector<int32_t> send(count, rank + 1), recv(count * static_cast<size_t>(nranks), 0);
  int wrong_first = 0, wrong_second = 0;
  std::string first_example, second_example;
  for (int i = 0; i < iterations; ++i) {
    psdp_comm_h child = nullptr;
    psdp_status_t s = psdp_comm_split(parent, 0, rank, &config, &child);
    report.check(s == PSDP_SUCCESS, "split: " + why(parent, s));
    if (s != PSDP_SUCCESS) break;
    s = psdp_all_reduce(send.data(), recv.data(), count, PSDP_INT32, PSDP_SUM, child, nullptr, nullptr);
    if (s != PSDP_SUCCESS || recv[0] != nranks * (nranks + 1) / 2) {
      if (wrong_first++ == 0) first_example = "iteration " + std::to_string(i) + ": " + why(child, s);
    }
    s = odd ? oddCall(i, count, send, recv, child)
            : psdp_all_reduce(send.data(), recv.data(), count, PSDP_INT32, PSDP_SUM, child, nullptr, nullptr);
    if (s != PSDP_ERR_MISMATCH) {
      if (wrong_second++ == 0) second_example = "iteration " + std::to_string(i) + ": " + why(child, s);
    }
    if (!(odd && destroy_at_once)) {
      s = psdp_barrier(child, nullptr);
      if (s == PSDP_SUCCESS && wrong_second++ == 0) second_example = "a later call succeeded";
    }
    report.check(psdp_comm_destroy(child) == PSDP_SUCCESS, "destroy");
    s = psdp_barrier(parent, nullptr);
    report.check(s == PSDP_SUCCESS, "the parent is unaffected: " + why(parent, s));
    if (s != PSDP_SUCCESS) break;
  }
  report.check(wrong_first == 0, std::to_string(wrong_first) + " of " + std::to_string(iterations) +
                                     " matching calls #0 did not succeed exactly; first: " + first_example);
  report.check(wrong_second == 0, std::to_string(wrong_second) + " of " + std::to_string(iterations) +
                                      " mismatched calls #1 did not return mismatch; first: " + second_example);
  std::printf("rank %d: %d iterations, %d wrong #0, %d wrong #1\n", rank, iterations, wrong_first, wrong_second);
  report.check(psdp_comm_finalize(parent) == PSDP_SUCCESS, "parent finalize");
  report.check(psdp_comm_destroy(parent) == PSDP_SUCCESS, "parent destroy");
  return report.finish();
}
