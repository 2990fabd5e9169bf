// psdp_comm_split: the new communicator gets its own transport (a new UCX worker), whose addresses travel
// through the parent's all-gather; no second rendezvous is needed, and parent and child share nothing
// afterwards, so they may run concurrently from different threads and be destroyed in any order.
#include <algorithm>
#include <cstring>
#include <optional>

#include "core/communicator.h"
#include "topo/numa_binding.h"

namespace psdp::core {
namespace {

// The parent ranks that chose `color`, ordered by (key, parent rank). colors_keys: (color, key) per rank.
std::vector<int> membersOf(const std::vector<int32_t>& colors_keys, int color) {
  std::vector<int> members;
  for (size_t r = 0; r < colors_keys.size() / 2; ++r) {
    if (colors_keys[2 * r] == color) members.push_back(static_cast<int>(r));
  }
  std::stable_sort(members.begin(), members.end(),
                   [&](int a, int b) { return colors_keys[2 * a + 1] < colors_keys[2 * b + 1]; });
  return members;
}

}  // namespace

Result<std::unique_ptr<Communicator>> Communicator::split(int color, int key, const Config* config) {
  if (color < 0 && color != PSDP_SPLIT_NOCOLOR) {
    return Status::invalidArgument("color {} is negative (only PSDP_SPLIT_NOCOLOR may be)", color);
  }
  int32_t mine[2] = {color, key};
  std::vector<int32_t> colors_keys(2 * static_cast<size_t>(nranks_));
  PSDP_RETURN_IF_ERROR(allGather(mine, colors_keys.data(), 2, PSDP_INT32));

  // A rank whose transport cannot be made still takes part in the exchanges below (with an empty address),
  // so that the other ranks are not left waiting; its group's peers then fail to connect to it.
  std::unique_ptr<Communicator> child;
  std::optional<topo::ScopedNumaBinding> binding;  // held until the child's threads and staging exist
  std::vector<int> members;
  std::vector<std::byte> address;
  Status local;
  if (color != PSDP_SPLIT_NOCOLOR) {
    members = membersOf(colors_keys, color);
    int child_rank = static_cast<int>(std::find(members.begin(), members.end(), rank_) - members.begin());
    // The parent's logger: its lines carry the parent rank, unique per process, and PSDP_LOG_FILE's %r
    // keeps naming one file per process.
    child.reset(new Communicator(child_rank, static_cast<int>(members.size()), config ? *config : config_, log_));
    local = child->adoptPlacements(placements_.subset(members));
    // The child's progress threads and staging go on the NUMA node of its own placement, which can differ
    // from the parent's where unbound ranks are spread over the nodes.
    if (local.isOk()) binding.emplace(child->placements_.placement(child_rank).numa_node);
    if (local.isOk()) local = child->createTransport();
    if (local.isOk()) {
      Result<std::vector<std::byte>> own = child->transport_->localAddress();
      if (own.isOk()) address = std::move(own).value();
      local = own.status();
    }
  }

  // Addresses differ in length: all-gather the lengths, then every address padded to the longest.
  uint64_t length = address.size();
  std::vector<uint64_t> lengths(static_cast<size_t>(nranks_));
  PSDP_RETURN_IF_ERROR(allGather(&length, lengths.data(), 1, PSDP_UINT64));
  size_t longest = static_cast<size_t>(*std::max_element(lengths.begin(), lengths.end()));
  address.resize(longest);
  std::vector<std::byte> table(longest * static_cast<size_t>(nranks_));
  PSDP_RETURN_IF_ERROR(allGather(address.data(), table.data(), longest, PSDP_UINT8));
  PSDP_RETURN_IF_ERROR(local);
  if (!child) return std::unique_ptr<Communicator>();

  std::vector<std::vector<std::byte>> addresses;
  for (int member : members) {
    const std::byte* begin = table.data() + static_cast<size_t>(member) * longest;
    addresses.emplace_back(begin, begin + lengths[static_cast<size_t>(member)]);
  }
  log_->debug("split: color {} key {} is rank {} of {}", color, key, child->rank_, child->nranks_);
  PSDP_RETURN_IF_ERROR(child->connectPeers(addresses, Deadline::after(child->config_.timeout_s)));
  return child;
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
