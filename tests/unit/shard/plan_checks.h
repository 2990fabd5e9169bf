// The planner's promises, checked from the outside: what every property test asserts for each plan.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "shard/reshard.h"
#include "shard/shard_plan.h"

namespace psdp::shard::testing {

// Every element of every parameter owned exactly once per shard group (level group; the replica groups
// own identical ranges) or once in the world (level world); world pieces nested in group pieces; piece
// boundaries aligned in the bytes of every dtype of their space; owned counts within one alignment unit of
// each other per chunk; chunks in registration order and within chunk_bytes; findChunk consistent with
// the chunks. Flat offsets are recomputed here from the buffer list rather than taken from the plan.
::testing::AssertionResult planInvariantsHold(const ShardPlan& plan);

// `moves` turn every old shard file into every new one: each new file is written exactly once, every
// source lies inside its old file, and source and destination name the same parameter element (matched
// by name).
::testing::AssertionResult reshardMovesValid(const ShardPlan& from, const ShardPlan& to,
                                             const std::vector<ReshardMove>& moves);

}  // namespace psdp::shard::testing
