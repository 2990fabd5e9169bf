// Pipelined chain broadcast: ranks form a chain starting at the root, in rank order modulo nranks; every
// fragment of fragment_bytes goes down the chain, received straight into recvbuf and forwarded from there as
// soon as it has arrived. No staging, no copy (except the root's sendbuf into its own recvbuf). For large
// messages every link carries the data once and the pipeline hides the chain's length.
#pragma once

#include <cstddef>
#include <memory>

#include "base/status.h"
#include "coll/op_context.h"
#include "coll/progress_loop.h"

namespace psdp::coll {

struct ChainBroadcastArgs {
  int root = 0;
  const std::byte* input = nullptr;  // the root's data (count elements); read on the root only
  std::byte* output = nullptr;       // count elements on every rank
  size_t count = 0;
  size_t elem_size = 0;
  size_t frag_elems = 0;
};

// REQUIRES: op.nranks >= 2, args.count > 0; `op` and `args` outlive the returned phase. On the root, copies
// input into output now when they differ.
PhasePtr startChainBroadcast(PhaseStorage& storage, const OpContext& op, const ChainBroadcastArgs& args);

}  // namespace psdp::coll
