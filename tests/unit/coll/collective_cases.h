// The cases of the multi-rank collective tests and the code that runs them on every rank of a UcxWorld and
// checks the results exactly. Data are integer valued (rank*1000 + index % 997), so float sums are exact.
#pragma once

#include <psdp/psdp.h>

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "unit/coll/ucx_world.h"

namespace psdp::coll::test {

enum class CaseKind { kReduceScatter, kAllGather, kAllReduce };

struct CollCase {
  CaseKind kind;
  size_t count;  // recvcount, sendcount or count, as the collective names it
  psdp_dtype_t dtype;
  bool in_place;
};

std::string caseName(const CollCase& c);

// Every combination of `kinds` x `counts` x {float32, int32} x {out of place, in place}.
std::vector<CollCase> combineCases(std::span<const CaseKind> kinds, std::span<const size_t> counts);

// Runs every case on every rank, once per fragment size, each rank with its own Collectives per fragment size.
// Failures are reported through gtest; a rank stops at its first failed collective (the others then
// time out once, and stop too).
void runCases(UcxWorld& world, const std::vector<CollCase>& cases, std::span<const size_t> fragment_sizes);

// `rounds` barriers on every rank; after each, every rank must see that all ranks entered it.
void runBarriers(UcxWorld& world, int rounds);

// A world kept across tests, so that consecutive tests on one world size share its transports. Asking for
// another size or mode closes the previous world. Fails the test (and returns null) if it cannot be built.
UcxWorld* sharedWorld(int nranks, psdp_progress_mode_t mode);

}  // namespace psdp::coll::test
