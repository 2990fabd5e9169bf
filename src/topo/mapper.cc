#include "topo/mapper.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "topo/nic_choice.h"

namespace psdp::topo {
namespace {

struct HostRanks {
  std::string id;
  std::vector<int> ranks;  // ascending at first, then in ring order
};

// Hosts in order of their lowest rank: walking the ranks in order meets each host first at that rank.
Result<std::vector<HostRanks>> groupByHost(std::span<const RankDescriptor> ranks) {
  std::vector<HostRanks> hosts;
  std::map<std::string, int> index_of;
  for (int r = 0; r < static_cast<int>(ranks.size()); ++r) {
    auto [it, added] = index_of.try_emplace(ranks[r].host_id, static_cast<int>(hosts.size()));
    if (added) hosts.push_back(HostRanks{ranks[r].host_id, {}});
    HostRanks& host = hosts[it->second];
    int first = host.ranks.empty() ? r : host.ranks.front();
    if (ranks[first].machine_digest != ranks[r].machine_digest) {
      return Status::mismatch(
          "ranks {} and {} both name host '{}' but see different machines (topology digests {:016x} and {:016x}): "
          "they run on different machines or containers that share a hostname; set PSDP_HOST_ID to a distinct "
          "value on each",
          first, r, host.id, ranks[first].machine_digest, ranks[r].machine_digest);
    }
    host.ranks.push_back(r);
  }
  return hosts;
}

// One locality token before another: shorter first, then by bytes. Bus ids have a fixed width, so among them
// this is plain string order; for numbered tokens it is numeric order ("numa8" before "numa10").
bool tokenBefore(const std::string& a, const std::string& b) {
  return a.size() != b.size() ? a.size() < b.size() : a < b;
}

// Sorting by the whole path puts ranks that share a prefix (a switch, a host bridge, a NUMA node) next to
// each other, which is the property the ring needs; ties (CPU-only ranks of one node) keep rank order.
void orderByLocality(std::span<const RankDescriptor> ranks, HostRanks& host) {
  std::stable_sort(host.ranks.begin(), host.ranks.end(), [&ranks](int a, int b) {
    const std::vector<std::string>& la = ranks[a].locality;
    const std::vector<std::string>& lb = ranks[b].locality;
    return std::lexicographical_compare(la.begin(), la.end(), lb.begin(), lb.end(), tokenBefore);
  });
}

// The NIC of each rank of one host, by the rule of chooseNics over the ranks' own candidate lists. NICs are
// told apart by name (the ranks of one host saw the same machine: the digests agree).
void placeNics(std::span<const RankDescriptor> ranks, const HostRanks& host, std::vector<RankPlacement>& out) {
  std::map<std::string, int> id_of;
  std::vector<std::string> names;
  std::vector<std::vector<int>> closest(host.ranks.size());
  std::vector<PathClass> best(host.ranks.size(), PathClass::kSys);
  for (size_t i = 0; i < host.ranks.size(); ++i) {
    const std::vector<NicCandidate>& nics = ranks[host.ranks[i]].nics;
    if (nics.empty()) continue;
    // The list comes sorted from describeRank, but a descriptor is not trusted to be: take the minimum.
    best[i] = std::min_element(nics.begin(), nics.end(), [](auto& a, auto& b) { return a.path < b.path; })->path;
    for (const NicCandidate& nic : nics) {
      if (nic.path != best[i]) continue;
      auto [it, added] = id_of.try_emplace(nic.name, static_cast<int>(names.size()));
      if (added) names.push_back(nic.name);
      closest[i].push_back(it->second);
    }
  }
  std::vector<int> chosen = spreadOverNics(closest, static_cast<int>(names.size()));
  for (size_t i = 0; i < host.ranks.size(); ++i) {
    if (chosen[i] < 0) continue;
    out[host.ranks[i]].nic = names[chosen[i]];
    out[host.ranks[i]].nic_path = best[i];
  }
}

// A rank with a GPU or a CPU binding keeps its node. Unbound CPU-only ranks are spread over the host's nodes
// in ring order, as evenly as the counts allow, so that their staging memory does not all land on node 0.
int numaNodeOf(const RankDescriptor& rank, int local_index, int ranks_on_host) {
  if (rank.numa_node >= 0 || rank.host_numa_nodes.empty()) return rank.numa_node;
  const int64_t nodes = static_cast<int64_t>(rank.host_numa_nodes.size());
  return rank.host_numa_nodes[static_cast<size_t>(int64_t{local_index} * nodes / ranks_on_host)];
}

void noteSharedGpus(std::span<const RankDescriptor> ranks, const HostRanks& host, std::vector<std::string>& notes) {
  std::map<std::string, int> first_user;
  for (int r : host.ranks) {
    const std::string& gpu = ranks[r].gpu_bus_id;
    if (gpu.empty()) continue;
    auto [it, added] = first_user.try_emplace(gpu, r);
    if (!added) notes.push_back(fmt::format("ranks {} and {} share GPU {} on host {}", it->second, r, gpu, host.id));
  }
}

std::string rankCounts(const std::vector<HostRanks>& hosts) {
  constexpr size_t kShown = 8;  // one sentence, even for 128 hosts
  std::string list;
  for (size_t h = 0; h < hosts.size() && h < kShown; ++h) {
    list += fmt::format("{}{}: {}", h ? ", " : "", hosts[h].id, hosts[h].ranks.size());
  }
  return hosts.size() > kShown ? list + ", ..." : list;
}

// Whether every shard group lies inside one host or is a run of whole hosts. The ring holds each host's
// ranks contiguously, so a group of consecutive ring positions is checked by where it starts and ends.
bool groupsFollowHosts(const RankMapping& m) {
  const int world = static_cast<int>(m.ring.size());
  std::vector<int> host_at(world);
  for (int i = 0; i < world; ++i) host_at[i] = m.placement[m.ring[i]].host;
  auto host_starts = [&](int i) { return i == 0 || host_at[i - 1] != host_at[i]; };
  auto host_ends = [&](int i) { return i == world - 1 || host_at[i + 1] != host_at[i]; };
  for (int start = 0; start < world; start += m.group_size) {
    int end = start + m.group_size - 1;
    bool inside_one = host_at[start] == host_at[end];
    bool whole_hosts = host_starts(start) && host_ends(end);
    if (!inside_one && !whole_hosts) return false;
  }
  return true;
}

void noteGroupShape(const std::vector<HostRanks>& hosts, RankMapping& m) {
  bool equal = std::all_of(hosts.begin(), hosts.end(),
                           [&hosts](const HostRanks& h) { return h.ranks.size() == hosts.front().ranks.size(); });
  if (!equal) m.notes.push_back(fmt::format("hosts run unequal numbers of ranks ({})", rankCounts(hosts)));
  if (groupsFollowHosts(m)) return;
  if (equal) {
    m.notes.push_back(
        fmt::format("shard groups of {} straddle hosts of {} ranks", m.group_size, hosts.front().ranks.size()));
  } else {
    m.notes.push_back(fmt::format("shard groups of {} straddle hosts ({})", m.group_size, rankCounts(hosts)));
  }
}

}  // namespace

Result<RankMapping> mapRanks(std::span<const RankDescriptor> ranks, int group_size) {
  const int world = static_cast<int>(ranks.size());
  if (world == 0) return Status::invalidArgument("no ranks to map");
  if (group_size < 1 || world % group_size != 0) {
    return Status::invalidArgument("shard group size {} does not divide the {} ranks", group_size, world);
  }
  PSDP_ASSIGN_OR_RETURN(std::vector<HostRanks> hosts, groupByHost(ranks));

  RankMapping m;
  m.group_size = group_size;
  m.placement.resize(world);
  for (int h = 0; h < static_cast<int>(hosts.size()); ++h) {
    HostRanks& host = hosts[h];
    orderByLocality(ranks, host);
    m.hosts.push_back(host.id);
    const int on_host = static_cast<int>(host.ranks.size());
    for (int i = 0; i < on_host; ++i) {
      int r = host.ranks[i];
      m.ring.push_back(r);
      m.placement[r].host = h;
      m.placement[r].local_index = i;
      m.placement[r].numa_node = numaNodeOf(ranks[r], i, on_host);
    }
    placeNics(ranks, host, m.placement);
    noteSharedGpus(ranks, host, m.notes);
  }
  // Shard groups are consecutive runs of the ring: inside a host when G divides its rank count, whole hosts
  // when the rank counts divide G; the layout is the ring either way, and the note says when it is neither.
  m.layout = m.ring;
  noteGroupShape(hosts, m);
  return m;
}

}  // namespace psdp::topo
