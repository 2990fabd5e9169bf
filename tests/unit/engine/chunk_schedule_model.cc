#include "unit/engine/chunk_schedule_model.h"

#include <fmt/format.h>

#include <algorithm>

namespace psdp::engine::model {
namespace {

// One team of one stage kind: what each member posted on it, in order, and which completions each member has
// been given.
struct Team {
  Stage stage;
  std::vector<int> members;               // world ranks, by team rank
  std::vector<std::vector<Post>> posted;  // per team rank: what it posted, in order
  std::vector<std::vector<bool>> done;    // per team rank, per op: its completion was delivered
};

struct Rank {
  ChunkSchedule schedule;
  std::vector<uint32_t> readiness;
  size_t reported = 0;
  std::vector<uint32_t> handed;  // handed out, not yet updated
  size_t handed_total = 0;
};

// An enabled event.
struct Event {
  enum Kind { kReport, kComplete, kUpdate } kind;
  int rank;
  size_t team = 0;  // kComplete
  size_t op = 0;    // kComplete: op index in the team; kUpdate: index into handed
};

class World {
 public:
  World(const WorldShape& shape, const std::vector<std::vector<uint32_t>>& readiness) : shape_(shape) {
    const int replicas = shape.world / shape.group;
    auto addTeams = [&](Stage stage, bool across_replicas) {
      const int count = across_replicas ? shape.group : replicas;
      for (int t = 0; t < count; ++t) {
        Team team{stage, {}, {}, {}};
        const int size = across_replicas ? replicas : shape.group;
        for (int i = 0; i < size; ++i)
          team.members.push_back(across_replicas ? i * shape.group + t : t * shape.group + i);
        team.posted.resize(static_cast<size_t>(size));
        team.done.resize(static_cast<size_t>(size));
        teams_.push_back(team);
      }
    };
    const ScheduleParams params = paramsOf(shape);
    addTeams(Stage::kReduceInGroup, false);
    if (params.reduce_across_replicas) addTeams(Stage::kReduceAcrossReplicas, true);
    if (params.gather_across_replicas) addTeams(Stage::kGatherAcrossReplicas, true);
    addTeams(Stage::kGatherInGroup, false);
    for (int r = 0; r < shape.world; ++r) {
      ranks_.push_back(Rank{ChunkSchedule::create(params).value(), readiness[static_cast<size_t>(r)], 0, {}, 0});
    }
  }

  std::string run(std::mt19937_64& random) {
    for (int r = 0; r < shape_.world; ++r) {
      if (std::string error = drain(r); !error.empty()) return error;
    }
    std::vector<Event> events;
    while (true) {
      enabled(events);
      if (events.empty()) break;
      const Event& e = events[std::uniform_int_distribution<size_t>(0, events.size() - 1)(random)];
      if (std::string error = apply(e); !error.empty()) return error;
      if (std::string error = drain(e.rank); !error.empty()) return error;
    }
    for (const Rank& rank : ranks_) {
      if (!rank.schedule.done()) return fmt::format("deadlock:\n{}", dump());
    }
    return {};
  }

 private:
  size_t teamOf(Stage stage, int rank) const {
    // The broken variant under test: gathers in the group post on the reductions' team.
    if (shape_.one_group_team && stage == Stage::kGatherInGroup) stage = Stage::kReduceInGroup;
    const bool across = stage == Stage::kReduceAcrossReplicas || stage == Stage::kGatherAcrossReplicas;
    const int key = across ? rank % shape_.group : rank / shape_.group;
    for (size_t t = 0; t < teams_.size(); ++t) {
      const Team& team = teams_[t];
      if (team.stage != stage) continue;
      const int first = team.members[0];
      if ((across ? first % shape_.group : first / shape_.group) == key) return t;
    }
    return SIZE_MAX;
  }
  static size_t memberIndex(const Team& team, int rank) {
    return static_cast<size_t>(std::find(team.members.begin(), team.members.end(), rank) - team.members.begin());
  }

  // Posts what rank r's schedule says and hands out its reduced chunks; checks the windows.
  std::string drain(int r) {
    Rank& rank = ranks_[static_cast<size_t>(r)];
    while (std::optional<Post> post = rank.schedule.nextPost()) {
      Team& team = teams_[teamOf(post->stage, r)];
      const size_t m = memberIndex(team, r);
      team.posted[m].push_back(*post);
      team.done[m].push_back(false);
    }
    while (std::optional<uint32_t> chunk = rank.schedule.nextReduced()) {
      rank.handed.push_back(*chunk);
      ++rank.handed_total;
    }
    if (rank.schedule.reducing() > shape_.reduce_window || rank.schedule.gathering() > shape_.gather_window) {
      return fmt::format("rank {} exceeds its windows: {} reducing, {} gathering", r, rank.schedule.reducing(),
                         rank.schedule.gathering());
    }
    return {};
  }

  void enabled(std::vector<Event>& events) const {
    events.clear();
    for (int r = 0; r < shape_.world; ++r) {
      const Rank& rank = ranks_[static_cast<size_t>(r)];
      if (rank.reported < rank.readiness.size()) events.push_back({Event::kReport, r});
      const bool may_update = shape_.policy == UpdatePolicy::kAnyTime || rank.handed_total == rank.schedule.chunks();
      if (may_update) {
        for (size_t i = 0; i < rank.handed.size(); ++i) events.push_back({Event::kUpdate, r, 0, i});
      }
    }
    // An op completes, member by member, once every member has posted it.
    for (size_t t = 0; t < teams_.size(); ++t) {
      const Team& team = teams_[t];
      size_t posted_by_all = SIZE_MAX;
      for (const auto& p : team.posted) posted_by_all = std::min(posted_by_all, p.size());
      for (size_t m = 0; m < team.members.size(); ++m) {
        for (size_t op = 0; op < posted_by_all; ++op) {
          if (!team.done[m][op]) events.push_back({Event::kComplete, team.members[m], t, op});
        }
      }
    }
  }

  std::string apply(const Event& e) {
    Rank& rank = ranks_[static_cast<size_t>(e.rank)];
    switch (e.kind) {
      case Event::kReport: {
        Status s = rank.schedule.gradientsReady(rank.readiness[rank.reported++]);
        return s.isOk() ? std::string() : s.toString();
      }
      case Event::kUpdate: {
        const uint32_t chunk = rank.handed[e.op];
        rank.handed.erase(rank.handed.begin() + static_cast<ptrdiff_t>(e.op));
        Status s = rank.schedule.updated(chunk);
        return s.isOk() ? std::string() : s.toString();
      }
      case Event::kComplete: {
        Team& team = teams_[e.team];
        const size_t m = memberIndex(team, e.rank);
        const Post post = team.posted[m][e.op];
        for (size_t other = 0; other < team.members.size(); ++other) {
          const Post& theirs = team.posted[other][e.op];
          if (!(theirs == post)) {
            return fmt::format(
                "mismatch on a {} team: op {} is {} of chunk {} on rank {} but {} of chunk {} on rank {}",
                stageName(team.stage), e.op, stageName(post.stage), post.chunk, e.rank, stageName(theirs.stage),
                theirs.chunk, team.members[other]);
          }
        }
        team.done[m][e.op] = true;
        Status s = rank.schedule.stageDone(post.chunk, post.stage);
        return s.isOk() ? std::string() : s.toString();
      }
    }
    return {};
  }

  std::string dump() const {
    std::string text;
    for (int r = 0; r < shape_.world; ++r) {
      const Rank& rank = ranks_[static_cast<size_t>(r)];
      text += fmt::format("rank {} (readiness", r);
      for (uint32_t c : rank.readiness) text += fmt::format(" {}", c);
      text += "):";
      for (uint32_t c = 0; c < rank.schedule.chunks(); ++c) text += " [" + rank.schedule.describe(c) + "]";
      text += "\n";
    }
    return text;
  }

  WorldShape shape_;
  std::vector<Team> teams_;
  std::vector<Rank> ranks_;
};

}  // namespace

ScheduleParams paramsOf(const WorldShape& shape) {
  ScheduleParams params;
  params.chunks = shape.chunks;
  params.reduce_order =
      shape.forward_reductions ? ScheduleParams::forward(shape.chunks) : ScheduleParams::backward(shape.chunks);
  params.gather_order = ScheduleParams::forward(shape.chunks);
  params.reduce_window = shape.reduce_window;
  params.gather_window = shape.gather_window;
  const bool replicas = shape.group < shape.world;
  params.reduce_across_replicas = replicas;
  params.gather_across_replicas = replicas && shape.world_level;
  return params;
}

std::string runStep(const WorldShape& shape, const std::vector<std::vector<uint32_t>>& readiness,
                    std::mt19937_64& random) {
  return World(shape, readiness).run(random);
}

}  // namespace psdp::engine::model
