// Bad input at the C boundary, as one table shared by the one-rank gtest (api_bad_input_test.cc) and the
// multi-process program (tests/mp/mp_bad_input.cc): every collective entry point with every argument a
// caller can get wrong, each in blocking and nonblocking form; the calls a destroyed or finalized handle
// must refuse; and a correct all-reduce, checked exactly, to show that the communicator still works.
// Only the public header is used. The checks return what went wrong ("" when nothing did), so that either
// rig can report it.
#pragma once

#include <psdp/psdp.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace psdp::testing {

// Storage the calls point into: 8-byte aligned, and large enough for every case at `nranks` ranks.
class BadInputArena {
 public:
  explicit BadInputArena(int nranks);
  // Byte `offset` of the first or of the second half.
  std::byte* first(size_t offset = 0) { return base() + offset; }
  std::byte* second(size_t offset = 0) { return base() + half_ + offset; }
  // Per-rank counts of the -v calls, `count` for every rank; the array lives as long as the arena.
  const size_t* counts(size_t count) {
    std::vector<size_t>& array = counts_[count];
    array.assign(static_cast<size_t>(nranks_), count);
    return array.data();
  }

 private:
  std::byte* base() { return reinterpret_cast<std::byte*>(storage_.data()); }
  int nranks_;
  std::vector<int64_t> storage_;
  size_t half_;
  std::map<size_t, std::vector<size_t>> counts_;
};

struct BadCall {
  std::string name;  // "all-reduce, nonblocking: NULL sendbuf"
  psdp_status_t expected;
  std::vector<std::string> words;  // the last error must contain each of them
  std::string absent;              // and not this one ("": no such constraint)
  bool nonblocking;
  std::function<psdp_status_t(psdp_comm_h, psdp_request_h*)> call;  // request_p NULL: blocking
};

// Every bad call of every collective and of send and recv, as `rank` of `nranks` would make it on `comm` (which makes
// the premul-sum ops some of them use). Nothing in them depends on the other ranks: each must be refused before
// anything is sent.
std::vector<BadCall> collectiveBadCalls(psdp_comm_h comm, int rank, int nranks, BadInputArena& arena);

// Makes `bad` on `comm`: "" when it returned the expected status, left *request_p alone and the last error
// of `comm` holds the words; otherwise what went wrong.
std::string checkBadCall(const BadCall& bad, psdp_comm_h comm);

// A blocking int32 sum all-reduce of a count that no rank count divides, with data that depends on the
// rank and on `round`, checked element by element: "" or what went wrong.
std::string checkAllReduceWorks(psdp_comm_h comm, int rank, int nranks, int round);

// Every entry point that takes a communicator, called on `dead` (destroyed, or finalized when `finalized`:
// then only the calls a finalized communicator refuses): each must return invalid usage with a last error
// saying why ("not a live communicator", "finalized") and write no output. Returns the failures, one line
// each.
std::vector<std::string> checkDeadHandle(psdp_comm_h dead, bool finalized);

// The calls a finalized communicator still answers (psdp.h, psdp_comm_finalize), on a one-rank one: rank, size,
// layout and placement give their answers, abort does nothing. Returns the failures, one line each.
std::vector<std::string> checkQueriesAfterFinalize(psdp_comm_h finalized);

// The checks every freed request must pass: free, test, wait and wait with timeout return invalid usage
// naming the request. Returns the failures.
std::vector<std::string> checkFreedRequest(psdp_request_h freed);

}  // namespace psdp::testing
