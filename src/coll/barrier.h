// Dissemination barrier (Hensgen, Finkel and Manber): ceil(log2 nranks) rounds; in round k a rank sends an
// empty message to rank + 2^k and waits for the one from rank - 2^k. After the last round every rank has
// heard, directly or through others, from every rank.
#pragma once

#include <memory>

#include "base/status.h"
#include "coll/op_context.h"
#include "coll/progress_loop.h"

namespace psdp::coll {

// The barrier as a state machine that the caller (a posted collective) drives; it completes once every
// rank has entered, or fails with the first error (remote error). REQUIRES: `op` outlives the phase.
std::unique_ptr<Phase> startDisseminationBarrier(const OpContext& op);

}  // namespace psdp::coll
