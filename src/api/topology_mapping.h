// psdp_topology_map's work: simulate hosts * ranks_per_host ranks on copies of one machine, run the same
// describeRank/mapRanks a communicator runs at init, and copy the result into the C structs.
#pragma once

#include <psdp/psdp.h>

#include "base/status.h"
#include "topo/topology.h"

namespace psdp::api {

// REQUIRES: nothing; every argument is checked here (naming it). Writes rank_layout and placements (when not
// NULL) only on success.
Status mapTopology(const topo::Topology& topology, int hosts, int ranks_per_host, int group_size, int* rank_layout,
                   psdp_rank_placement_t* placements);

}  // namespace psdp::api
