#include "topo/hwloc_import.h"

#include <cstring>
#include <iterator>
#include <string_view>
#include <type_traits>
#include <utility>

namespace psdp::topo {
namespace {

// hwloc's XML import stores whatever integer a file gives in its enum attributes (OS device and bridge
// types); reading such a field as its enum is undefined for a value outside the enum, so it is read as the
// integer it holds.
template <typename Enum>
long long rawEnum(const Enum& field) {
  std::underlying_type_t<Enum> value;
  std::memcpy(&value, &field, sizeof(value));
  return static_cast<long long>(value);
}

// GPU runtimes whose OS devices name a GPU the way users know it, most preferred first. The DGX-2 file labels
// `nvml*` as COPROC without a subtype, so the name prefix is what counts.
constexpr std::string_view kGpuRuntimePrefixes[] = {"cuda", "nvml", "rsmi"};

// The rank of an OS device among the GPU runtimes (lower is preferred as the GPU's name), or -1.
int gpuRuntimeRank(hwloc_obj_t osdev) {
  std::string_view name = osdev->name != nullptr ? osdev->name : "";
  for (size_t i = 0; i < std::size(kGpuRuntimePrefixes); ++i) {
    if (name.starts_with(kGpuRuntimePrefixes[i])) return static_cast<int>(i);
  }
  bool level_zero = osdev->subtype != nullptr && std::string_view(osdev->subtype) == "LevelZero";
  return level_zero ? static_cast<int>(std::size(kGpuRuntimePrefixes)) : -1;
}

// The OS devices under one PCI function, gathered before deciding what the function is.
struct OsDevices {
  std::vector<std::string> all;
  std::string best_gpu_name;  // the most preferred runtime name, empty if none
  int best_gpu_rank = -1;
  std::vector<std::string> fabric;   // OpenFabrics (verbs) names
  std::vector<std::string> network;  // network interface names
};

OsDevices collectOsDevices(hwloc_obj_t pcidev) {
  OsDevices os;
  for (hwloc_obj_t c = pcidev->io_first_child; c != nullptr; c = c->next_sibling) {
    if (c->type != HWLOC_OBJ_OS_DEVICE || c->name == nullptr) continue;
    os.all.emplace_back(c->name);
    if (rawEnum(c->attr->osdev.type) == HWLOC_OBJ_OSDEV_OPENFABRICS) os.fabric.emplace_back(c->name);
    if (rawEnum(c->attr->osdev.type) == HWLOC_OBJ_OSDEV_NETWORK) os.network.emplace_back(c->name);
    int rank = gpuRuntimeRank(c);
    if (rank >= 0 && (os.best_gpu_rank < 0 || rank < os.best_gpu_rank)) {
      os.best_gpu_rank = rank;
      os.best_gpu_name = c->name;
    }
  }
  return os;
}

class HwlocImporter {
 public:
  HwlocImporter(hwloc_topology_t hwloc, Topology& out) : hwloc_(hwloc), out_(out) {}

  Status run() {
    importCpus();
    walk(hwloc_get_root_obj(hwloc_));
    return importNvlinkPeers(hwloc_, gpu_pci_, out_);
  }

 private:
  int packageOf(hwloc_obj_t obj) const {
    if (obj->type != HWLOC_OBJ_PACKAGE) obj = hwloc_get_ancestor_obj_by_type(hwloc_, HWLOC_OBJ_PACKAGE, obj);
    return obj != nullptr ? static_cast<int>(obj->logical_index) : -1;
  }
  // NUMA nodes are stored in logical order, so an os index maps to its logical index.
  int numaOf(unsigned os_index) const {
    hwloc_obj_t numa = hwloc_get_numanode_obj_by_os_index(hwloc_, os_index);
    return numa != nullptr ? static_cast<int>(numa->logical_index) : -1;
  }

  void importCpus() {
    for (hwloc_obj_t p = nullptr; (p = hwloc_get_next_obj_by_type(hwloc_, HWLOC_OBJ_PACKAGE, p)) != nullptr;) {
      out_.packages.push_back(Package{static_cast<int>(p->os_index)});
    }
    for (hwloc_obj_t n = nullptr; (n = hwloc_get_next_obj_by_type(hwloc_, HWLOC_OBJ_NUMANODE, n)) != nullptr;) {
      out_.numa_nodes.push_back(NumaNode{static_cast<int>(n->os_index), packageOf(n), n->attr->numanode.local_memory});
    }
    for (hwloc_obj_t c = nullptr; (c = hwloc_get_next_obj_by_type(hwloc_, HWLOC_OBJ_CORE, c)) != nullptr;) {
      int first_numa = c->nodeset != nullptr ? hwloc_bitmap_first(c->nodeset) : -1;
      out_.cores.push_back(Core{static_cast<int>(c->os_index), packageOf(c),
                                first_numa >= 0 ? numaOf(static_cast<unsigned>(first_numa)) : -1,
                                c->cpuset != nullptr ? hwloc_bitmap_weight(c->cpuset) : 0});
    }
  }

  // The anchor for I/O hanging off the non-I/O object `obj`, created on first use.
  int anchorOf(hwloc_obj_t obj) {
    for (size_t i = 0; i < anchor_objs_.size(); ++i) {
      if (anchor_objs_[i] == obj) return static_cast<int>(i);
    }
    CpuAnchor anchor;
    anchor.package = packageOf(obj);
    if (obj->nodeset != nullptr) {
      unsigned os = 0;
      hwloc_bitmap_foreach_begin(os, obj->nodeset) {
        int numa = numaOf(os);
        if (numa >= 0) anchor.numa.push_back(numa);
      }
      hwloc_bitmap_foreach_end();
    }
    anchor_objs_.push_back(obj);
    out_.anchors.push_back(std::move(anchor));
    return static_cast<int>(out_.anchors.size()) - 1;
  }

  // Normal children first, then the I/O trees whose roots hang off this object.
  void walk(hwloc_obj_t obj) {
    for (hwloc_obj_t c = obj->first_child; c != nullptr; c = c->next_sibling) walk(c);
    if (obj->io_first_child == nullptr) return;
    int anchor = anchorOf(obj);
    for (hwloc_obj_t io = obj->io_first_child; io != nullptr; io = io->next_sibling) visitIo(io, -1, anchor);
  }

  int addPciNode(PciNode node) {
    out_.pci.push_back(std::move(node));
    return static_cast<int>(out_.pci.size()) - 1;
  }

  void visitIo(hwloc_obj_t obj, int parent, int anchor) {
    int self = -1;
    if (obj->type == HWLOC_OBJ_BRIDGE) {
      self = addPciNode(bridgeNode(obj, parent, anchor));
    } else if (obj->type == HWLOC_OBJ_PCI_DEVICE) {
      const auto& a = obj->attr->pcidev;
      self = addPciNode(PciNode{PciKind::kDevice, formatBusId(a.domain, a.bus, a.dev, a.func), a.class_id, a.vendor_id,
                                a.device_id, parent, anchor});
      classifyFunction(obj, self, anchor);
    } else if (obj->type == HWLOC_OBJ_OS_DEVICE && parent < 0) {
      addStandaloneNic(obj, anchor);  // a network device with no PCI function (virtual or unknown bus)
      return;
    } else {
      return;
    }
    for (hwloc_obj_t c = obj->io_first_child; c != nullptr; c = c->next_sibling) visitIo(c, self, anchor);
  }

  static PciNode bridgeNode(hwloc_obj_t obj, int parent, int anchor) {
    const auto& b = obj->attr->bridge;
    if (rawEnum(b.upstream_type) != HWLOC_OBJ_BRIDGE_PCI) {
      return PciNode{PciKind::kHostBridge, "", 0, 0, 0, parent, anchor};
    }
    const auto& a = b.upstream.pci;
    return PciNode{PciKind::kBridge,
                   formatBusId(a.domain, a.bus, a.dev, a.func),
                   a.class_id,
                   a.vendor_id,
                   a.device_id,
                   parent,
                   anchor};
  }

  // A PCI function is a GPU by class and vendor (or when a GPU runtime names it), a NIC when the OS gave it a
  // network or verbs device: a NIC without one cannot carry traffic.
  void classifyFunction(hwloc_obj_t obj, int pci, int anchor) {
    const auto& a = obj->attr->pcidev;
    OsDevices os = collectOsDevices(obj);
    if (isGpuFunction(a.class_id, a.vendor_id) || os.best_gpu_rank >= 0) {
      std::string name = os.best_gpu_name.empty() ? out_.pci[pci].bus_id : os.best_gpu_name;
      out_.gpus.push_back(Gpu{std::move(name), std::move(os.all), pci, anchor, {}});
      gpu_pci_.push_back(obj);
      return;
    }
    if (os.fabric.empty() && os.network.empty()) return;
    Nic nic;
    nic.kind = !os.fabric.empty() || isFabricFunction(a.class_id, a.vendor_id) ? NicKind::kFabric : NicKind::kEthernet;
    nic.name = !os.fabric.empty() ? os.fabric.front() : os.network.front();
    nic.os_names = std::move(os.all);
    nic.pci = pci;
    nic.anchor = anchor;
    out_.nics.push_back(std::move(nic));
  }

  void addStandaloneNic(hwloc_obj_t osdev, int anchor) {
    const long long type = rawEnum(osdev->attr->osdev.type);
    if ((type != HWLOC_OBJ_OSDEV_NETWORK && type != HWLOC_OBJ_OSDEV_OPENFABRICS) || osdev->name == nullptr) return;
    Nic nic;
    nic.kind = type == HWLOC_OBJ_OSDEV_OPENFABRICS ? NicKind::kFabric : NicKind::kEthernet;
    nic.name = osdev->name;
    nic.os_names = {nic.name};
    nic.anchor = anchor;
    out_.nics.push_back(std::move(nic));
  }

  hwloc_topology_t hwloc_;
  Topology& out_;
  std::vector<hwloc_obj_t> anchor_objs_;  // parallel to out_.anchors
  std::vector<hwloc_obj_t> gpu_pci_;      // parallel to out_.gpus
};

}  // namespace

Result<Topology> importHwloc(hwloc_topology_t hwloc, TopologySource source, std::string origin) {
  Topology topology;
  topology.source = source;
  topology.origin = std::move(origin);
  HwlocImporter importer(hwloc, topology);
  PSDP_RETURN_IF_ERROR(importer.run());
  return topology;
}

}  // namespace psdp::topo
