#include "core/state_teams.h"

namespace psdp::core {
namespace {

bool acrossReplicas(engine::Stage stage) {
  return stage == engine::Stage::kReduceAcrossReplicas || stage == engine::Stage::kGatherAcrossReplicas;
}

}  // namespace

Result<StateTeams> makeStateTeams(Communicator& comm, const shard::ShardPlan& plan) {
  const shard::RankLayout& layout = plan.layout();
  const shard::RankPosition pos = layout.position(comm.rank());
  StateTeams teams;
  for (int s = 0; s < engine::kStageKinds; ++s) {
    const auto stage = static_cast<engine::Stage>(s);
    if (acrossReplicas(stage)) {
      if (layout.replicas() == 1) continue;
      // At level group the replica gathers have nothing to do: the group piece is replicated already.
      if (stage == engine::Stage::kGatherAcrossReplicas && plan.config().level != shard::ShardLevel::kWorld) continue;
      PSDP_ASSIGN_OR_RETURN(teams.teams[s], comm.split(pos.member, pos.replica, nullptr));
    } else {
      PSDP_ASSIGN_OR_RETURN(teams.teams[s], comm.split(pos.replica, pos.member, nullptr));
    }
  }
  return teams;
}

std::vector<engine::Team> StateTeams::engineTeams(const shard::ShardPlan& plan, int rank) {
  const shard::RankLayout& layout = plan.layout();
  const shard::RankPosition pos = layout.position(rank);
  std::vector<engine::Team> views(engine::kStageKinds);
  for (int s = 0; s < engine::kStageKinds; ++s) {
    Communicator* comm = teams[s].get();
    if (comm == nullptr) continue;
    engine::Team& view = views[static_cast<size_t>(s)];
    view.collectives = comm->hostCollectives();
    view.queue = comm->taskQueue();
    view.rank = comm->rank();
    if (acrossReplicas(static_cast<engine::Stage>(s))) {
      for (int k = 0; k < layout.replicas(); ++k) view.world_ranks.push_back(layout.rankAt(k, pos.member));
    } else {
      for (int g = 0; g < layout.groupSize(); ++g) view.world_ranks.push_back(layout.rankAt(pos.replica, g));
    }
  }
  return views;
}

}  // namespace psdp::core
