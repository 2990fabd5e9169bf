// The machine model every topology source is turned into: hwloc discovery of the live machine, an hwloc XML
// file, or an NCCL topology file (NCCL_TOPO_FILE) all produce one Topology, so that path classes and the
// mapper never care where the facts came from.
//
// The model is a plain value: vectors of small structs that refer to each other by index, no pointers and
// no library handles, so it can be copied, compared in tests and built for 128 hosts without chasing
// allocations. An index of -1 means "none".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace psdp::topo {

struct Package {
  int os_index = -1;
};

// NUMA os indexes can be sparse (POWER9 uses 0 and 8); refer to a node by its position in
// Topology::numa_nodes and keep os_index for display.
struct NumaNode {
  int os_index = -1;
  int package = -1;  // index into Topology::packages, -1 when unknown (NCCL files)
  uint64_t memory_bytes = 0;
};

struct Core {
  int os_index = -1;
  int package = -1;  // index into Topology::packages
  int numa = -1;     // index into Topology::numa_nodes (the first local one)
  int pus = 0;       // hardware threads
};

// The CPU-side object an I/O tree hangs off: an hwloc non-I/O object (package, group, NUMA-level group) or an
// NCCL <cpu> element. A path between two devices that meets only here crosses the CPU's root complex (PHB).
struct CpuAnchor {
  std::vector<int> numa;  // indexes into Topology::numa_nodes local to this anchor
  int package = -1;       // index into Topology::packages, -1 when unknown
};

enum class PciKind : uint8_t {
  kHostBridge,  // the root of one PCI domain/bus range (hwloc HostBridge)
  kBridge,      // a PCI-to-PCI bridge: a root port, a switch port, or an NCCL (virtual) switch
  kDevice,      // an endpoint function: GPU, NIC, disk controller...
};

struct PciNode {
  PciKind kind = PciKind::kDevice;
  std::string bus_id;     // "dddd:bb:dd.f", lowercase; empty for an hwloc host bridge
  uint32_t class_id = 0;  // 16-bit class (0x0302), as hwloc reports it; NCCL's 24-bit classes are shifted
  uint16_t vendor_id = 0;
  uint16_t device_id = 0;
  int parent = -1;  // index into Topology::pci; -1 for a root, which hangs off `anchor`
  int anchor = -1;  // index into Topology::anchors, the same for every node of one tree
};

struct Gpu {
  std::string name;                   // the first OS device name (cuda0, nvml3, rsmi1), else the bus id
  std::vector<std::string> os_names;  // every OS device name hwloc attached (cuda0, nvml0, opencl0d0, card0)
  int pci = -1;                       // index into Topology::pci
  int anchor = -1;                    // index into Topology::anchors
  std::vector<int> nvlink_peers;      // indexes into Topology::gpus reachable over NVLink, sorted
};

// kFabric: an RDMA-capable or HPC fabric port (OpenFabrics/verbs, InfiniBand class, EFA, Slingshot); kEthernet:
// a plain network interface. Collectives want fabric ports when a machine has them.
enum class NicKind : uint8_t { kFabric, kEthernet };

struct Nic {
  std::string name;                   // the OpenFabrics name (mlx5_0) if any, else the network name (ib0)
  std::vector<std::string> os_names;  // every OS device name
  NicKind kind = NicKind::kEthernet;
  int pci = -1;             // index into Topology::pci; -1 for an NCCL <nic> without a PCI parent
  int anchor = -1;          // index into Topology::anchors
  uint64_t speed_mbps = 0;  // NCCL files only; 0 when unknown
};

enum class TopologySource : uint8_t { kLiveMachine, kHwlocXml, kNcclXml };

struct Topology {
  TopologySource source = TopologySource::kLiveMachine;
  std::string origin;  // the file name, or "live machine"
  std::vector<Package> packages;
  std::vector<NumaNode> numa_nodes;
  std::vector<Core> cores;
  std::vector<CpuAnchor> anchors;
  std::vector<PciNode> pci;
  std::vector<Gpu> gpus;
  std::vector<Nic> nics;
};

// "dddd:bb:dd.f" in lowercase.
std::string formatBusId(unsigned domain, unsigned bus, unsigned dev, unsigned func);

// GPUs are recognised by their PCI function, not by OS device labels, which differ between hwloc backends
// (a DGX-2 file has `nvml*` COPROC devices without subtype): a display class (VGA 0x0300, 3D 0x0302,
// other 0x0380) from NVIDIA or AMD. Other vendors' VGA functions are board management controllers.
bool isGpuFunction(uint32_t class_id, uint16_t vendor_id);

// Whether a network function is a fabric port by its PCI identity: InfiniBand class 0x0207, or a vendor that
// makes only fabric adapters (Mellanox/NVIDIA networking, AWS EFA, HPE Slingshot).
bool isFabricFunction(uint32_t class_id, uint16_t vendor_id);

// How many GPUs / NICs of each kind, for logs and tests.
int countNics(const Topology& topology, NicKind kind);

}  // namespace psdp::topo
