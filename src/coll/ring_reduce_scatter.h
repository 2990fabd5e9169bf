// Pipelined ring reduce-scatter: nranks-1 steps; at each, a rank forwards to its right neighbour the
// partial sum of one block and adds what its left neighbour sent to its own input. Used by reduce-scatter
// and as the first half of all-reduce.
#pragma once

#include <memory>

#include <cstddef>

#include "base/status.h"
#include "coll/op_context.h"
#include "coll/progress_loop.h"
#include "coll/reduce_kernels.h"
#include "coll/ring_schedule.h"

namespace psdp::coll {

struct RingReduceScatterArgs {
  const std::byte* input = nullptr;  // every block, laid out by `layout`; only read
  std::byte* output = nullptr;       // receives the reduction of block op.rank; may be that block of input
  BlockLayout layout{0, 1};
  size_t elem_size = 0;
  size_t frag_elems = 0;  // REQUIRES: frag_elems * elem_size <= op.staging.slot_bytes
  ReduceKernel kernel;
};

// The ring pass as a state machine that the caller (a posted collective) drives; done once every fragment
// has been reduced and every send has completed. REQUIRES: op.nranks >= 2; op.staging has 2 * op.depth()
// slots; `op` and `args` outlive the returned phase.
PhasePtr startRingReduceScatter(PhaseStorage& storage, const OpContext& op, const RingReduceScatterArgs& args);

}  // namespace psdp::coll
