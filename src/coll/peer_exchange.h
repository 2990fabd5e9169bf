// The rooted and personalised collectives that move each block once, straight between the callers' buffers:
// gather (every rank's block to the root), scatter (block r of the root's buffer to rank r) and all-to-all
// (block j of rank i's buffer to block i of rank j's). One message per pair and direction, no staging, no
// copy but this rank's own block. Bandwidth is what the busiest rank's links allow: the root's for gather and
// scatter, every rank's for all-to-all, as with NCCL's grouped send/recv these collectives are made of.
#pragma once

#include <cstddef>

#include "coll/op_context.h"
#include "coll/progress_loop.h"

namespace psdp::coll {

enum class ExchangePattern { kGather, kScatter, kAllToAll };

struct PeerExchangeArgs {
  ExchangePattern pattern = ExchangePattern::kAllToAll;
  int root = 0;                      // gather and scatter
  const std::byte* input = nullptr;  // gather: one block; scatter (root), all-to-all: nranks blocks
  std::byte* output = nullptr;       // gather (root), all-to-all: nranks blocks; scatter: one block
  size_t block_bytes = 0;
};

// REQUIRES: op.nranks >= 2, args.block_bytes > 0; `op` and `args` outlive the returned phase. Copies this
// rank's own block now where it stays on this rank (skipped when it is already in place).
PhasePtr startPeerExchange(PhaseStorage& storage, const OpContext& op, const PeerExchangeArgs& args);

}  // namespace psdp::coll
