// A model of a sharded step over W ranks, each driven by its own ChunkSchedule, for checking the ordering
// rule: teams that complete a collective once every member has posted it (and fail if the members posted
// different ones there), frameworks that report gradients in their own order and update chunks by their own
// policy, and an adversary that picks which enabled event happens next. A run ends when every rank has
// gathered every chunk, or fails naming what went wrong (a mismatch, a window exceeded, or a deadlock: no
// event enabled while some rank is not done, with every rank's chunk states).
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "engine/chunk_schedule.h"

namespace psdp::engine::model {

// How a rank's framework updates the chunks it is handed.
enum class UpdatePolicy {
  kAnyTime,         // any handed chunk, at any moment, in any order
  kAfterAllReduced  // none until every chunk has been handed out (global-norm clipping), then any order
};

struct WorldShape {
  int world = 2;
  int group = 2;             // G, dividing world; contiguous layout: rank r is member r % G of shard group r / G
  bool world_level = false;  // level world: replica stages reduce-scatter and gather; level group: all-reduce
  size_t chunks = 3;
  size_t reduce_window = 1;
  size_t gather_window = 1;
  UpdatePolicy policy = UpdatePolicy::kAnyTime;
  // Reductions in forward order, like the gathers (backward by default).
  bool forward_reductions = false;
  // A broken rule, to show the checker finds one: the gathers in the group share the reductions' team.
  bool one_group_team = false;
};

// The schedule parameters every rank of `shape` uses (backward reductions unless forward_reductions, forward
// gathers).
ScheduleParams paramsOf(const WorldShape& shape);

// Runs one step: rank r reports its chunks' gradients in readiness[r]'s order; `random` picks among the
// enabled events. Returns an empty string on success, else what went wrong.
std::string runStep(const WorldShape& shape, const std::vector<std::vector<uint32_t>>& readiness,
                    std::mt19937_64& random);

}  // namespace psdp::engine::model
