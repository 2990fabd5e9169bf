// What one rank tells the others about where it runs, so that every rank can compute the same mapping from
// the gathered descriptors alone (mapper.h), without shipping whole topologies: its host, its GPU, its NUMA
// node, a locality path that orders ranks of one host by their closest common ancestor, and the NICs it
// could use with their path class.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "topo/path_class.h"
#include "topo/topology.h"

namespace psdp::topo {

struct NicCandidate {
  std::string name;                  // Nic::name (mlx5_0, hsi1, eth0)
  PathClass path = PathClass::kSys;  // from the rank's GPU, or from its NUMA node's CPU anchor when CPU-only
  uint64_t speed_mbps = 0;           // 0 when unknown
};

struct RankDescriptor {
  // The hostname, or PSDP_HOST_ID when set (ranks in separate UTS namespaces of one machine, or containers
  // sharing a hostname, count as separate hosts only through it).
  std::string host_id;
  // A digest of the host's topology (packages, NUMA nodes, cores, GPU and NIC bus ids): two ranks naming the
  // same host must see the same machine, otherwise the host ids are inconsistent and the mapper refuses them.
  uint64_t machine_digest = 0;
  // os index of the NUMA node the rank's GPU hangs off, else the one its CPU binding lies in; -1 when
  // unknown or unbound across several nodes.
  int numa_node = -1;
  // Every NUMA node of the host (os indexes, sorted): lets the mapper spread unbound CPU-only ranks.
  std::vector<int> host_numa_nodes;
  std::string gpu_bus_id;  // "dddd:bb:dd.f"; empty when the rank has no GPU
  // The device's ancestors from the root down, as stable tokens ("pkg0", "numa1", "pci0000:16:00.0", ...,
  // the GPU's own bus id last): ranks sorted by it sit next to the rank they share the deepest ancestor with.
  std::vector<std::string> locality;
  // Fabric NICs when the host has any, else every NIC; best path class first, then host order.
  std::vector<NicCandidate> nics;
};

// This rank's descriptor from its host's topology. gpu_bus_id empty: CPU-only; a bus id the topology does not
// list is an error (invalid argument naming it). It may be in any case, with NVML's 8-digit domain or without a
// domain ("17:00.0"); the descriptor holds the "dddd:bb:dd.f" form. cpu_numa_node: the NUMA node (os index) of
// the rank's CPU binding, -1 when unknown; one the host does not have counts as unknown (a hint, never an error).
//
// NIC path classes of a CPU-only rank: PHB for a NIC whose CPU anchor holds cpu_numa_node, NODE for one on
// another node of the same package, SYS otherwise and for every NIC when cpu_numa_node is -1. Errors besides
// the above: a host id over 255 bytes (invalid argument); a host beyond what the wire form carries (more than
// 64 NUMA nodes or 64 candidate NICs: unsupported).
Result<RankDescriptor> describeRank(const Topology& host, std::string host_id, const std::string& gpu_bus_id,
                                    int cpu_numa_node);

// A compact, versioned wire form (it travels in the bootstrap payload, at most a few hundred bytes).
// decodeDescriptor errors: invalid argument for a truncated, oversized or wrong-version buffer, never a crash.
std::vector<std::byte> encodeDescriptor(const RankDescriptor& descriptor);
Result<RankDescriptor> decodeDescriptor(std::span<const std::byte> bytes);

}  // namespace psdp::topo
