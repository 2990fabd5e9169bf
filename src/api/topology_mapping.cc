#include "api/topology_mapping.h"

#include <algorithm>
#include <climits>
#include <string>
#include <vector>

#include "api/placement_args.h"
#include "api/validate.h"
#include "base/log.h"
#include "topo/mapper.h"
#include "topo/rank_descriptor.h"

namespace psdp::api {
namespace {

Status checkShape(int hosts, int ranks_per_host, int group_size) {
  if (hosts < 1) return Status::invalidArgument("hosts is {}; it must be at least 1", hosts);
  if (ranks_per_host < 1) return Status::invalidArgument("ranks_per_host is {}; it must be at least 1", ranks_per_host);
  if (hosts > INT_MAX / ranks_per_host) {
    return Status::invalidArgument("hosts * ranks_per_host ({} * {}) overflows int", hosts, ranks_per_host);
  }
  const int world = hosts * ranks_per_host;
  if (group_size < 1 || world % group_size != 0) {
    return Status::invalidArgument("group_size {} does not divide the {} ranks (hosts {} * ranks_per_host {})",
                                   group_size, world, hosts, ranks_per_host);
  }
  return Status::ok();
}

// The descriptors of one host's ranks; every simulated host is a copy of the same machine, so only the host id
// differs between hosts.
Result<std::vector<topo::RankDescriptor>> describeHost(const topo::Topology& topology, int ranks_per_host) {
  const bool with_gpus = topology.gpus.size() >= static_cast<size_t>(ranks_per_host);
  std::vector<topo::RankDescriptor> ranks;
  ranks.reserve(ranks_per_host);
  for (int local = 0; local < ranks_per_host; ++local) {
    std::string bus_id;
    int cpu_numa = -1;
    if (with_gpus) {
      const int pci = topology.gpus[local].pci;
      if (pci >= 0) bus_id = topology.pci[pci].bus_id;
    } else if (!topology.numa_nodes.empty()) {
      // CPU-only ranks bound evenly over the NUMA nodes, as a launcher's --cpu-bind would place them, so that
      // each is offered the NICs close to its node.
      const size_t nodes = topology.numa_nodes.size();
      cpu_numa = topology.numa_nodes[static_cast<size_t>(local) * nodes / static_cast<size_t>(ranks_per_host)].os_index;
    }
    PSDP_ASSIGN_OR_RETURN(topo::RankDescriptor d, topo::describeRank(topology, "host0", bus_id, cpu_numa));
    ranks.push_back(std::move(d));
  }
  return ranks;
}

}  // namespace

Status mapTopology(const topo::Topology& topology, int hosts, int ranks_per_host, int group_size, int* rank_layout,
                   psdp_rank_placement_t* placements) {
  PSDP_RETURN_IF_ERROR(checkOut(rank_layout, "rank_layout"));
  PSDP_RETURN_IF_ERROR(checkShape(hosts, ranks_per_host, group_size));
  PSDP_ASSIGN_OR_RETURN(std::vector<topo::RankDescriptor> host_ranks, describeHost(topology, ranks_per_host));
  const int world = hosts * ranks_per_host;
  std::vector<topo::RankDescriptor> ranks;
  ranks.reserve(world);
  for (int h = 0; h < hosts; ++h) {
    for (const topo::RankDescriptor& d : host_ranks) {
      ranks.push_back(d);
      ranks.back().host_id = "host" + std::to_string(h);
    }
  }
  PSDP_ASSIGN_OR_RETURN(topo::RankMapping mapping, topo::mapRanks(ranks, group_size));
  for (const std::string& note : mapping.notes) processLog().info("topology map: {}", note);
  const auto n = static_cast<size_t>(world);
  if (mapping.layout.size() != n || mapping.ring.size() != n || mapping.placement.size() != n) {
    return Status::internal("the mapper returned {} layout entries, {} ring entries and {} placements for {} ranks",
                            mapping.layout.size(), mapping.ring.size(), mapping.placement.size(), world);
  }

  // Every check is behind us: from here on only writes, so the outputs stay untouched on any error.
  std::vector<int> ring_position(n);
  for (size_t pos = 0; pos < n; ++pos) ring_position[mapping.ring[pos]] = static_cast<int>(pos);
  std::copy(mapping.layout.begin(), mapping.layout.end(), rank_layout);
  if (placements == nullptr) return Status::ok();
  for (size_t r = 0; r < n; ++r) {
    fillPlacement(mapping.placement[r], ring_position[r], ranks[r].gpu_bus_id, &placements[r]);
  }
  return Status::ok();
}

}  // namespace psdp::api
