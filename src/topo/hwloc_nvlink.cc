// NVLink reachability from hwloc's "NVLinkBandwidth" distance matrices. The matrix mixes object types: GPUs
// (as OS devices or PCI functions), NVSwitches (PCI functions of a bridge class) and CPU packages (POWER
// NVLink to the CPU). Two GPUs are NVLink peers when a link joins them directly or through NVSwitches only;
// a path through a CPU is not NVLink between GPUs. On a DGX-2 every GPU reaches the other 15 through the
// switches, and GPU-to-GPU entries are all 0.
#include <hwloc.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "topo/hwloc_handle.h"
#include "topo/hwloc_import.h"

namespace psdp::topo {
namespace {

constexpr int kSwitch = -2;   // an NVSwitch or other non-GPU PCI function: links pass through it
constexpr int kBlocked = -1;  // a CPU or anything else: links end there

// What a matrix entry is: a GPU index, kSwitch or kBlocked.
int roleOf(hwloc_obj_t obj, const std::vector<hwloc_obj_t>& gpu_pci) {
  if (obj == nullptr) return kBlocked;
  hwloc_obj_t pci = obj->type == HWLOC_OBJ_OS_DEVICE ? obj->parent : obj;
  if (pci == nullptr || pci->type != HWLOC_OBJ_PCI_DEVICE) return kBlocked;
  auto it = std::find(gpu_pci.begin(), gpu_pci.end(), pci);
  return it != gpu_pci.end() ? static_cast<int>(it - gpu_pci.begin()) : kSwitch;
}

// Marks in `peers[g]` every GPU reachable from GPU g over links of `d`, passing only through switches.
void addReachable(const hwloc_distances_s& d, const std::vector<int>& roles, std::vector<std::vector<int>>& peers) {
  const unsigned n = d.nbobjs;
  for (unsigned start = 0; start < n; ++start) {
    if (roles[start] < 0) continue;
    std::vector<bool> seen(n, false);
    std::vector<unsigned> todo{start};
    seen[start] = true;
    while (!todo.empty()) {
      unsigned at = todo.back();
      todo.pop_back();
      for (unsigned next = 0; next < n; ++next) {
        if (seen[next] || (d.values[at * n + next] == 0 && d.values[next * n + at] == 0)) continue;
        seen[next] = true;
        if (roles[next] >= 0) peers[roles[start]].push_back(roles[next]);
        if (roles[next] == kSwitch) todo.push_back(next);
      }
    }
  }
}

}  // namespace

Status importNvlinkPeers(hwloc_topology_t hwloc, const std::vector<hwloc_obj_t>& gpu_pci, Topology& topology) {
  if (gpu_pci.size() < 2) return Status::ok();
  unsigned count = 0;
  errno = 0;
  PSDP_RETURN_IF_ERROR(
      hwlocCheck(hwloc_distances_get_by_name(hwloc, "NVLinkBandwidth", &count, nullptr, 0), "hwloc_distances_get"));
  std::vector<hwloc_distances_s*> raw(count, nullptr);
  errno = 0;
  PSDP_RETURN_IF_ERROR(
      hwlocCheck(hwloc_distances_get_by_name(hwloc, "NVLinkBandwidth", &count, raw.data(), 0), "hwloc_distances_get"));
  std::vector<HwlocDistances> matrices;
  for (unsigned i = 0; i < count && i < raw.size(); ++i) matrices.emplace_back(hwloc, raw[i]);

  std::vector<std::vector<int>> peers(gpu_pci.size());
  for (const HwlocDistances& d : matrices) {
    std::vector<int> roles(d->nbobjs);
    for (unsigned i = 0; i < d->nbobjs; ++i) roles[i] = roleOf(d->objs[i], gpu_pci);
    addReachable(*d, roles, peers);
  }
  for (size_t g = 0; g < peers.size(); ++g) {
    std::vector<int>& p = peers[g];
    p.erase(std::remove(p.begin(), p.end(), static_cast<int>(g)), p.end());
    std::sort(p.begin(), p.end());
    p.erase(std::unique(p.begin(), p.end()), p.end());
    topology.gpus[g].nvlink_peers = std::move(p);
  }
  return Status::ok();
}

}  // namespace psdp::topo
