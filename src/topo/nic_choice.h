// Which NIC each GPU should send through: the closest one by path class, spread so that GPUs do not queue on
// one NIC while an equally close one idles (two A100s and two HDR ports under one switch get one port each).
#pragma once

#include <vector>

#include "topo/path_class.h"
#include "topo/topology.h"

namespace psdp::topo {

struct NicChoice {
  int gpu = -1;
  int nic = -1;  // index into Topology::nics; -1 when the machine has no NIC
  PathClass path = PathClass::kSys;
};

// One entry per GPU, in GPU order. Only fabric NICs are considered when the machine has any (a 1 GbE
// management port is never the right choice next to InfiniBand); otherwise every NIC.
//
// Each GPU takes the least loaded of its closest NICs (lowest index on ties); GPUs with fewer closest NICs
// choose first, so a GPU with one close NIC is not crowded out by one with several. Fallbacks, not errors: a
// machine without GPUs gives an empty list (CPU-only: the caller uses the host's NICs directly), a machine
// without NICs gives nic = -1 for every GPU (single-host runs need none).
std::vector<NicChoice> chooseNics(const Topology& topology);

// The spreading rule of chooseNics, shared with the mapper (which sees NICs by name in each rank's descriptor,
// not a Topology). closest[i]: the NICs at item i's best path class, as ids in [0, nic_count), in preference
// order (host order). Returns the NIC id chosen for each item, -1 for an item without options.
//
// Items with fewer options choose first (ties in item order); each takes the least loaded of its options, the
// earliest in its list on ties. REQUIRES: every id is in [0, nic_count).
std::vector<int> spreadOverNics(const std::vector<std::vector<int>>& closest, int nic_count);

}  // namespace psdp::topo
