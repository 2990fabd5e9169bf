// Resharding: turning the shard files saved under one plan into the shard files of another (different W,
// G, level, chunk size, alignment or rank layout) over the same parameters.
//
// A rank's shard file is the concatenation of its owned ranges in chunk order (ShardPlan::ownedRanges(rank)),
// one such file per optimizer-state buffer; offsets below count elements in it.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "shard/shard_plan.h"

namespace psdp::shard {

// Copy `count` elements from offset `from_offset` of old rank `from_rank`'s file to offset `to_offset` of
// new rank `to_rank`'s file.
struct ReshardMove {
  int from_rank = 0;
  uint64_t from_offset = 0;
  int to_rank = 0;
  uint64_t to_offset = 0;
  uint64_t count = 0;
  bool operator==(const ReshardMove&) const = default;
};

// Moves that fill every new rank's file exactly once, sorted by (to_rank, to_offset); consecutive moves
// that continue each other on both sides are merged. When several old ranks hold an element (level group
// with R > 1 replicas), the source is the new rank itself if it held it, else the holder in replica group
// (to_rank mod R): deterministic, and spread over the replicas. Parameters are matched by name, so the new
// plan may register them in another order. Errors: invalid argument when the plans' parameters differ
// (a name missing on either side, or a different count).
Result<std::vector<ReshardMove>> reshardMoves(const ShardPlan& from, const ShardPlan& to);

}  // namespace psdp::shard
