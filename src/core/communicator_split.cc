// psdp_comm_split: the new communicator is a team on the parent's context by default: its members agree on
// a team id through the parent's all-gather, and it shares the parent's transport and driver (no thread,
// worker or endpoint is made). Where a rank asks for a context of its own, every new team gets one, whose
// addresses travel through the parent's all-gathers: no second rendezvous either way.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <optional>

#include "base/environment.h"
#include "core/agreed_settings.h"
#include "core/communicator.h"
#include "topo/numa_binding.h"

namespace psdp::core {
namespace {

// What each parent rank says in the split's first all-gather: then its settings for the child
// (AgreedSettings), which the members of a color must share.
enum SplitField { kColor, kKey, kOwnContext, kNextTeamId, kSettings, kSplitFields = kSettings + kAgreedSettingsWords };

// The parent ranks that chose `color`, ordered by (key, parent rank). table: kSplitFields per rank.
std::vector<int> membersOf(const std::vector<int64_t>& table, int color) {
  auto field = [&](size_t r, SplitField f) { return table[r * kSplitFields + f]; };
  std::vector<int> members;
  for (size_t r = 0; r < table.size() / kSplitFields; ++r) {
    if (field(r, kColor) == color) members.push_back(static_cast<int>(r));
  }
  std::stable_sort(members.begin(), members.end(), [&](int a, int b) {
    return field(static_cast<size_t>(a), kKey) < field(static_cast<size_t>(b), kKey);
  });
  return members;
}

}  // namespace

Result<std::unique_ptr<Communicator>> Communicator::split(int color, int key, const Config* config) {
  if (color < 0 && color != PSDP_SPLIT_NOCOLOR) {
    return Status::invalidArgument("color {} is negative (only PSDP_SPLIT_NOCOLOR may be)", color);
  }
  const Config& child_config = config ? *config : config_;
  // The parent's tuning file, unless the child's config names another: read now, so that its hash is agreed
  // with the child's other settings. A rank that cannot read it still takes part in the all-gather below.
  LoadedTuning child_tuning = tuning_;
  Status tuning_status;
  if (child_config.tuning_file != config_.tuning_file) {
    Result<LoadedTuning> loaded = loadTuning(child_config, ProcessEnvironment::instance());
    tuning_status = loaded.status();
    child_tuning = loaded.isOk() ? std::move(loaded).value() : LoadedTuning();
  }
  const bool own_context = color != PSDP_SPLIT_NOCOLOR &&
                           (!child_config.split_share || child_config.progress_mode != context_->progressMode());
  int64_t mine[kSplitFields] = {color, key, own_context ? 1 : 0, static_cast<int64_t>(context_->nextTeamId())};
  const AgreedSettings child_settings = agreedSettingsOf(child_config, child_tuning.hash());
  std::copy(child_settings.begin(), child_settings.end(), mine + kSettings);
  std::vector<int64_t> table(kSplitFields * static_cast<size_t>(nranks_));
  PSDP_RETURN_IF_ERROR(allGather(mine, table.data(), kSplitFields, PSDP_INT64));
  bool any_own = false;
  for (int r = 0; r < nranks_; ++r) any_own |= table[static_cast<size_t>(r) * kSplitFields + kOwnContext] != 0;

  std::unique_ptr<Communicator> child;
  std::optional<topo::ScopedNumaBinding> binding;  // held until the child's threads and staging exist
  std::vector<int> members;
  Status local;
  if (color != PSDP_SPLIT_NOCOLOR) {
    members = membersOf(table, color);
    int child_rank = static_cast<int>(std::find(members.begin(), members.end(), rank_) - members.begin());
    // The parent's logger: its lines carry the parent rank, unique per process, and PSDP_LOG_FILE's %r
    // keeps naming one file per process.
    child.reset(new Communicator(child_rank, static_cast<int>(members.size()), child_config, log_));
    child->tuning_ = std::move(child_tuning);
    std::vector<AgreedSettings> settings(members.size());
    for (size_t i = 0; i < members.size(); ++i) {
      const int64_t* row = table.data() + static_cast<size_t>(members[i]) * kSplitFields + kSettings;
      std::copy(row, row + kAgreedSettingsWords, settings[i].begin());
    }
    local =
        tuning_status.isOk()
            ? checkAgreedSettings(settings, members).withContext(fmt::format("split color {} (parent ranks)", color))
            : tuning_status;
    if (local.isOk()) local = child->adoptPlacements(placements_.subset(members));
    // The child's staging (and threads, with a context of its own) go on the NUMA node of its own placement,
    // which can differ from the parent's where unbound ranks are spread over the nodes.
    if (local.isOk()) binding.emplace(child->placements_.placement(child_rank).numa_node);
  }
  if (!any_own) {
    PSDP_RETURN_IF_ERROR(local);
    if (!child) return std::unique_ptr<Communicator>();
    uint64_t team_id = 0;
    for (int member : members) {
      team_id =
          std::max(team_id, static_cast<uint64_t>(table[static_cast<size_t>(member) * kSplitFields + kNextTeamId]));
    }
    log_->debug("split: color {} key {} is rank {} of {}, team {} of this context", color, key, child->rank_,
                child->nranks_, team_id);
    PSDP_RETURN_IF_ERROR(shareContext(*child, members, team_id));
    return child;
  }

  // A context of its own. A rank whose transport cannot be made still takes part in the exchanges below
  // (with an empty address), so that the other ranks are not left waiting; its group's peers then fail to
  // connect to it.
  std::shared_ptr<Context> context;
  std::vector<std::byte> address;
  if (child && local.isOk()) {
    Result<std::shared_ptr<Context>> made =
        Context::create(child->rank_, child->nranks_, child_config.progress_mode, log_);
    local = made.status();
    if (made.isOk()) context = std::move(made).value();
  }
  if (context) {
    Result<std::vector<std::byte>> own = context->transport().localAddress();
    if (own.isOk()) address = std::move(own).value();
    local = own.status();
  }
  PSDP_ASSIGN_OR_RETURN(std::vector<std::vector<std::byte>> every_address, allGatherBytes(address));
  PSDP_RETURN_IF_ERROR(local);
  if (!child) return std::unique_ptr<Communicator>();

  std::vector<std::vector<std::byte>> addresses;
  for (int member : members) addresses.push_back(std::move(every_address[static_cast<size_t>(member)]));
  log_->debug("split: color {} key {} is rank {} of {}, on a context of its own", color, key, child->rank_,
              child->nranks_);
  PSDP_RETURN_IF_ERROR(context->connect(addresses, Deadline::after(child->config_.timeout_s)));
  std::vector<int> ranks(members.size());
  std::iota(ranks.begin(), ranks.end(), 0);
  PSDP_RETURN_IF_ERROR(child->joinContext(std::move(context), /*team_id=*/0, std::move(ranks)));
  return child;
}

// The child's members in the context's ranks: this team's view maps them.
Status Communicator::shareContext(Communicator& child, const std::vector<int>& members, uint64_t team_id) {
  std::vector<int> context_ranks;
  context_ranks.reserve(members.size());
  for (int member : members) context_ranks.push_back(team_->members()[static_cast<size_t>(member)]);
  return child.joinContext(context_, team_id, std::move(context_ranks));
}

Result<Communicator::LayoutTeams> Communicator::splitLayout(int group_size, const Config* config) {
  PSDP_RETURN_IF_ERROR(checkUsable("split by layout"));
  PSDP_ASSIGN_OR_RETURN(std::vector<int> layout, placements_.layout(group_size));
  // This rank's position p = k * G + g in the layout: member g of shard group k, replica k of replica group g.
  const int position = static_cast<int>(std::find(layout.begin(), layout.end(), rank_) - layout.begin());
  const int k = position / group_size, g = position % group_size;
  LayoutTeams teams;
  PSDP_ASSIGN_OR_RETURN(teams.shard, split(k, g, config));
  PSDP_ASSIGN_OR_RETURN(teams.replica, split(g, k, config));
  return teams;
}

}  // namespace psdp::core
