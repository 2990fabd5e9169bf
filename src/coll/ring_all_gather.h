// Pipelined ring all-gather: nranks-1 steps; at each, a rank forwards to its right neighbour the block it
// received from its left neighbour at the step before. Fragments are received straight into the output
// and forwarded from there: no staging, no copy. Used by all-gather and as the second half of all-reduce.
#pragma once

#include <memory>

#include <cstddef>

#include "base/status.h"
#include "coll/op_context.h"
#include "coll/progress_loop.h"
#include "coll/ring_schedule.h"

namespace psdp::coll {

struct RingAllGatherArgs {
  const std::byte* own = nullptr;  // this rank's block, layout.size(op.rank) elements: sendbuf, or in output
  std::byte* output = nullptr;     // every block, laid out by `layout`
  BlockLayout layout{0, 1};
  size_t elem_size = 0;
  size_t frag_elems = 0;
};

// The ring pass as a state machine that the caller (a posted collective) drives. Copies `own` into its
// block of output now when it is elsewhere; done once every fragment has arrived and every send has
// completed. REQUIRES: op.nranks >= 2, and `op` and `args` outlive the returned phase.
PhasePtr startRingAllGather(PhaseStorage& storage, const OpContext& op, const RingAllGatherArgs& args);

}  // namespace psdp::coll
