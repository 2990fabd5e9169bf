// The teams of a registered state's chunk engine (engine/chunk_schedule.h: one per stage kind): splits of
// the registration's communicator on its context (no new thread, worker or endpoint), so that the user's own
// collectives on their communicators never share a team, and so an order, with the engine's.
#pragma once

#include <memory>
#include <vector>

#include "base/status.h"
#include "core/communicator.h"
#include "engine/chunk_schedule.h"
#include "engine/team.h"
#include "shard/shard_plan.h"

namespace psdp::core {

struct StateTeams {
  // By engine::Stage; the replica ones null when G == W.
  std::unique_ptr<Communicator> teams[engine::kStageKinds];

  // The engine's view of them: member g of shard group k is rank g of its shard teams, replica k of replica
  // group g rank k of its replica teams, with the world ranks of the plan's layout.
  std::vector<engine::Team> engineTeams(const shard::ShardPlan& plan, int rank);
};

// Collective over `comm` (four splits, two without replicas). Errors: as Communicator::split.
Result<StateTeams> makeStateTeams(Communicator& comm, const shard::ShardPlan& plan);

}  // namespace psdp::core
