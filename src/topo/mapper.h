// The mapper: from every rank's descriptor, which ranks form each shard group and each replica group, the
// order of the world ring, the NIC and the NUMA node of each rank. A pure function of the descriptors, so
// every rank computes the same answer without a further exchange.
//
// Hosts are ordered by their lowest rank; the ranks of one host by their locality path (then rank), so ring
// neighbours share the closest ancestor (same PCIe switch, then host bridge, then NUMA node, then socket).
// Shard groups are G consecutive ranks of that order: inside one host when G divides the ranks per host,
// whole consecutive hosts when the ranks per host divide G; otherwise the same order with a note that the
// groups straddle hosts. Replica group g is member g of every shard group, so it runs across hosts between
// ranks at the same position (rail-aligned NICs).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "topo/path_class.h"
#include "topo/rank_descriptor.h"

namespace psdp::topo {

struct RankPlacement {
  int host = -1;         // index into RankMapping::hosts
  int local_index = -1;  // position of the rank among its host's ranks, in ring order
  int numa_node = -1;    // os index the rank's staging memory and progress thread belong on; -1: leave unbound
  std::string nic;       // empty when the host has no NIC
  PathClass nic_path = PathClass::kSys;
};

struct RankMapping {
  std::vector<std::string> hosts;  // host ids, in ring order
  std::vector<int> ring;           // every rank: hosts in order, each host's ranks by locality
  int group_size = 0;
  // The rank layout for group_size: layout[k * G + g] is member g of shard group k (and so member k of
  // replica group g). A permutation of [0, world).
  std::vector<int> layout;
  std::vector<RankPlacement> placement;  // indexed by rank
  // Fallbacks taken, one sentence each, for the log ("shard groups of 3 straddle hosts of 4 ranks").
  std::vector<std::string> notes;
};

// REQUIRES nothing of the descriptors. Errors (invalid argument): an empty list, group_size < 1 or not
// dividing the number of ranks; mismatch: two ranks name one host but report different machines (the
// message names both ranks and the host, and suggests PSDP_HOST_ID). Ranks sharing one GPU get a note.
Result<RankMapping> mapRanks(std::span<const RankDescriptor> ranks, int group_size);

}  // namespace psdp::topo
