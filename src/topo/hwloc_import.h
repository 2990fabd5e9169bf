// Turns a loaded hwloc topology into the psdp model (topo/topology.h): CPUs, NUMA nodes, the PCI trees, GPUs,
// NICs and NVLink reachability. Used for the live machine and for hwloc XML files alike.
#pragma once

#include <hwloc.h>

#include <string>
#include <vector>

#include "base/status.h"
#include "topo/topology.h"

namespace psdp::topo {

// REQUIRES: `hwloc` is loaded. Reads it only; the returned model holds no hwloc pointer.
Result<Topology> importHwloc(hwloc_topology_t hwloc, TopologySource source, std::string origin);

// Fills Gpu::nvlink_peers from hwloc's "NVLinkBandwidth" distance matrices (hwloc_nvlink.cc). `gpu_pci[i]` is
// the hwloc PCI function of topology.gpus[i].
Status importNvlinkPeers(hwloc_topology_t hwloc, const std::vector<hwloc_obj_t>& gpu_pci, Topology& topology);

}  // namespace psdp::topo
