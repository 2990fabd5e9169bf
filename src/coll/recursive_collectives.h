// Recursive halving/doubling collectives: log2(n) exchanges with partners at distance 1, 2, 4, ... instead
// of the ring's n-1 (or 2(n-1)) steps, for messages small enough that latency, not bandwidth, dominates.
// Each is a Phase driven like the ring ones, using one completion per direction, staging slots of
// op.staging, and op.tag.
//
//   all-reduce      recursive doubling on the whole vector, any n: the first 2r ranks (r = n - p, p the
//                   largest power of two <= n) fold pairwise into p ranks first and get the result back
//                   last. Every pairwise combine is ordered by group number (the lower partner's data is
//                   the `partial` operand), so both partners compute the same bits and every rank ends
//                   with a bitwise identical result.
//   reduce-scatter  recursive halving, power-of-two n only.
//   all-gather      recursive doubling, power-of-two n only, straight into the output.
//
// Reduce-scatter and all-gather on other rank counts use the ring: folding adds two full steps (the
// extra ranks' whole vector in, their block out), and at the small n where that could pay the ring is
// already short (n=3: 2 ring steps against 3 folded ones; n=5..7: 4..6 against 4).
#pragma once

#include <cstddef>
#include <memory>

#include "coll/op_context.h"
#include "coll/progress_loop.h"
#include "coll/reduce_kernels.h"

namespace psdp::coll {

struct RecursiveAllReduceArgs {
  const std::byte* input = nullptr;  // count elements; only read (may be output, in place)
  std::byte* output = nullptr;       // count elements: the working buffer, then the result
  size_t count = 0;
  size_t elem_size = 0;
  ReduceKernel kernel;    // combines partial results; never scales (the plain sum for premul-sum)
  ReduceKernel prescale;  // premul-sum only (scalesInput()): scales this rank's input once, at the start
};

// REQUIRES: op.nranks >= 2, count >= 1, count * elem_size <= op.staging.slot_bytes; `op` and `args`
// outlive the phase.
PhasePtr startRecursiveAllReduce(PhaseStorage& storage, const OpContext& op, const RecursiveAllReduceArgs& args);

struct RecursiveReduceScatterArgs {
  const std::byte* input = nullptr;  // nranks blocks of block_count elements; only read
  std::byte* output = nullptr;       // block op.rank of the reduction; may be that block of input
  size_t block_count = 0;
  size_t elem_size = 0;
  ReduceKernel kernel;  // as the caller gave it: the first step combines (and scales) this rank's input
  ReduceKernel sum;     // later steps combine partial results: kernel itself, or plain sum for premul-sum
};

// REQUIRES: op.nranks a power of two >= 2, block_count >= 1, (nranks/2) * block_count * elem_size <=
// op.staging.slot_bytes, three staging slots.
PhasePtr startRecursiveReduceScatter(PhaseStorage& storage, const OpContext& op,
                                     const RecursiveReduceScatterArgs& args);

struct RecursiveAllGatherArgs {
  const std::byte* own = nullptr;  // this rank's block: sendbuf, or already in output
  std::byte* output = nullptr;     // nranks blocks of block_count elements
  size_t block_count = 0;
  size_t elem_size = 0;
};

// Copies `own` into its block of output now when it is elsewhere. REQUIRES: op.nranks a power of two >= 2.
PhasePtr startRecursiveAllGather(PhaseStorage& storage, const OpContext& op, const RecursiveAllGatherArgs& args);

// Whether n is a power of two (n >= 1).
constexpr bool isPowerOfTwo(int n) {
  return n > 0 && (n & (n - 1)) == 0;
}

}  // namespace psdp::coll
