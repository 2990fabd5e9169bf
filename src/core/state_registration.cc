#include "core/state_registration.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>

#include "shard/plan_hash.h"

namespace psdp::core {
namespace {

// What each rank contributes to the first all-gather, as uint64 words.
struct Summary {
  uint64_t list_digest = 0;
  uint64_t config_digest = 0;
  uint64_t nbuffers = 0;
  uint64_t rejected = 0;  // 1: this rank's own input makes no plan
};
constexpr size_t kSummaryWords = sizeof(Summary) / sizeof(uint64_t);

// Everything a rank can check alone: the plan input, its pointers, and the sizes of its optimizer state.
Result<shard::ShardPlan> planLocally(const std::vector<shard::BufferDesc>& buffers, const std::vector<void*>& pointers,
                                     const shard::PlanConfig& config, int rank) {
  PSDP_ASSIGN_OR_RETURN(shard::ShardPlan plan, shard::ShardPlan::build(buffers, config));
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (pointers[i] == nullptr && buffers[i].count > 0) {
      return Status::invalidArgument("buffers[{}] ('{}'): ptr is NULL for {} elements", i, buffers[i].name,
                                     buffers[i].count);
    }
  }
  PSDP_RETURN_IF_ERROR(plan.checkShardSizedBuffers(rank));
  return plan;
}

// "rank 3", "ranks 0-2 and 5".
std::string describeRanks(const std::vector<int>& ranks) {
  std::vector<std::string> runs;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    runs.push_back(j == i ? std::to_string(ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[j]));
    i = j + 1;
  }
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < runs.size(); ++i) {
    if (i > 0) text += i + 1 == runs.size() ? " and " : ", ";
    text += runs[i];
  }
  return text;
}

// The ranks grouped by the value each contributed, in order of their lowest rank: "ranks 0-2 and 5 vs rank 3".
std::string describeSides(const std::vector<uint64_t>& values) {
  std::map<uint64_t, std::vector<int>> by_value;
  for (size_t r = 0; r < values.size(); ++r) by_value[values[r]].push_back(static_cast<int>(r));
  std::vector<std::vector<int>> sides;
  for (auto& [value, ranks] : by_value) sides.push_back(std::move(ranks));
  std::sort(sides.begin(), sides.end());
  std::string text;
  for (size_t i = 0; i < sides.size(); ++i) text += (i > 0 ? " vs " : "") + describeRanks(sides[i]);
  return text;
}

std::string describeBuffer(const shard::BufferDesc& b) {
  return fmt::format("'{}' ({}, {} x {})", b.name, shard::roleName(b.role), b.count, shard::dtypeName(b.dtype));
}

// The second exchange, when the lists differ: one digest per buffer (0 past a rank's last buffer).
Status describeListMismatch(Communicator& comm, const std::vector<shard::BufferDesc>& buffers,
                            const std::vector<uint64_t>& digests, const std::vector<Summary>& summaries) {
  uint64_t longest = 0;
  for (const Summary& s : summaries) longest = std::max(longest, s.nbuffers);
  std::vector<uint64_t> mine(longest, 0);
  std::copy(digests.begin(), digests.end(), mine.begin());
  std::vector<uint64_t> all(longest * summaries.size());
  PSDP_RETURN_IF_ERROR(comm.allGather(mine.data(), all.data(), longest, PSDP_UINT64));
  for (uint64_t i = 0; i < longest; ++i) {
    std::vector<uint64_t> column(summaries.size());
    for (size_t r = 0; r < summaries.size(); ++r) column[r] = all[r * longest + i];
    if (std::all_of(column.begin(), column.end(), [&](uint64_t v) { return v == column[0]; })) continue;
    std::string here =
        i < buffers.size() ? describeBuffer(buffers[i]) : std::string("no buffer (its list ends before)");
    return Status::mismatch("ranks registered different state from buffers[{}] on: {} (rank {} registers {})", i,
                            describeSides(column), comm.rank(), here);
  }
  // Equal per-buffer digests but different list digests cannot happen; say so rather than guess.
  return Status::internal("registered state: list digests differ but every buffer digest agrees");
}

}  // namespace

Result<std::unique_ptr<RegisteredState>> registerState(Communicator& comm, Result<StateInput> input) {
  std::vector<shard::BufferDesc> no_buffers;
  const std::vector<shard::BufferDesc>& buffers = input.isOk() ? input.value().buffers : no_buffers;
  std::vector<uint64_t> digests;
  Summary mine;
  if (input.isOk()) {
    shard::PlanConfig& config = input.value().config;
    config.world_size = comm.size();
    // The mapper's layout (groups inside hosts); a group size it cannot use is left for the planner to name.
    Result<std::vector<int>> layout = comm.placements().layout(config.group_size);
    config.rank_layout = layout.isOk() ? std::move(layout).value() : std::vector<int>();
    for (const shard::BufferDesc& b : buffers) digests.push_back(shard::registrationDigest(b));
    mine = Summary{shard::digestOf(digests), shard::configDigest(config), buffers.size(), 0};
  }
  Result<shard::ShardPlan> plan = input.isOk()
                                      ? planLocally(buffers, input.value().pointers, input.value().config, comm.rank())
                                      : Result<shard::ShardPlan>(input.status());
  mine.rejected = plan.isOk() ? 0 : 1;
  std::vector<Summary> all(static_cast<size_t>(comm.size()));
  PSDP_RETURN_IF_ERROR(comm.allGather(&mine, all.data(), kSummaryWords, PSDP_UINT64));

  if (!plan.isOk()) return plan.status();
  for (int r = 0; r < comm.size(); ++r) {
    if (all[r].rejected != 0) {
      return Status::invalidArgument(
          "rank {} rejected its own buffer list or plan configuration (its error names "
          "the field); nothing was registered",
          r);
    }
  }
  std::vector<uint64_t> configs, lists;
  for (const Summary& s : all) {
    configs.push_back(s.config_digest);
    lists.push_back(s.list_digest);
  }
  if (std::any_of(configs.begin(), configs.end(), [&](uint64_t v) { return v != configs[0]; })) {
    return Status::mismatch("ranks registered state with different plan configurations: {}", describeSides(configs));
  }
  if (std::any_of(lists.begin(), lists.end(), [&](uint64_t v) { return v != lists[0]; })) {
    return describeListMismatch(comm, buffers, digests, all);
  }
  auto state =
      std::make_unique<RegisteredState>(std::move(plan).value(), std::move(input.value().pointers), comm.rank());
  if (const tune::EngineRule* rule = comm.tunedEngineRule(state->plan_.config().chunk_bytes)) {
    state->tuned_engine_ = *rule;
    comm.log()->info(
        "tuning file {} line {}: steps of this state take window {}, grouping {} and fragment {} where their "
        "config leaves them unset (0: the rule does not say)",
        comm.tuningFile(), rule->line, rule->window, rule->grouping, rule->fragment_bytes);
  }
  // The engine's teams: splits every rank makes alike, since every rank has the same plan now.
  PSDP_ASSIGN_OR_RETURN(state->teams_, makeStateTeams(comm, state->plan_));
  state->engine_ = std::make_unique<engine::StateEngine>(
      state->plan_, state->rank_, state->pointers_, state->teams_.engineTeams(state->plan_, state->rank_), comm.log());
  state->deterministic_ = comm.config().deterministic;
  return state;
}

RegisteredState::~RegisteredState() {
  engine_.reset();
}

}  // namespace psdp::core
