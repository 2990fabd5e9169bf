// A team the engine posts on: the collectives and task queue of one of the communicators core makes for a
// registered state (one per stage kind, engine/chunk_schedule.h), and who its members are. The engine never
// sees the communicator itself.
#pragma once

#include <vector>

#include "coll/collectives.h"
#include "coll/task_queue.h"

namespace psdp::engine {

struct Team {
  coll::Collectives* collectives = nullptr;  // null: the step has no such stage
  coll::TaskQueue* queue = nullptr;
  int rank = 0;                  // this rank's, in the team
  std::vector<int> world_ranks;  // by team rank: the rank in the registration's communicator

  bool exists() const { return collectives != nullptr; }
};

}  // namespace psdp::engine
