#include "topo/path_class.h"

#include <algorithm>

namespace psdp::topo {
namespace {

// The longest chain of PCI bridges in the models we read is the DGX-2's (GPU, two switches, root port);
// leave room for deeper ones without allocating.
constexpr int kMaxBridges = 16;

struct Endpoint {
  int pci = -1;
  int anchor = -1;
};

Endpoint endpointOf(const Topology& t, DeviceRef ref) {
  if (ref.kind == DeviceRef::Kind::kGpu) return Endpoint{t.gpus[ref.index].pci, t.gpus[ref.index].anchor};
  return Endpoint{t.nics[ref.index].pci, t.nics[ref.index].anchor};
}

// The PCI bridges above `pci`, nearest first, stopping below the host bridge; returns how many.
int bridgesAbove(const Topology& t, int pci, int (&chain)[kMaxBridges]) {
  int n = 0;
  for (int at = pci >= 0 ? t.pci[pci].parent : -1; at >= 0 && n < kMaxBridges; at = t.pci[at].parent) {
    if (t.pci[at].kind != PciKind::kBridge) break;
    chain[n++] = at;
  }
  return n;
}

bool shareNuma(const CpuAnchor& a, const CpuAnchor& b) {
  return std::any_of(a.numa.begin(), a.numa.end(),
                     [&b](int n) { return std::find(b.numa.begin(), b.numa.end(), n) != b.numa.end(); });
}

PathClass classifyCpuSide(const Topology& t, int anchor_a, int anchor_b) {
  if (anchor_a == anchor_b) return PathClass::kPhb;
  if (anchor_a < 0 || anchor_b < 0) return PathClass::kSys;
  return shareNuma(t.anchors[anchor_a], t.anchors[anchor_b]) ? PathClass::kNode : PathClass::kSys;
}

}  // namespace

const char* pathClassName(PathClass path) {
  switch (path) {
    case PathClass::kLoc: return "LOC";
    case PathClass::kNvl: return "NVL";
    case PathClass::kPix: return "PIX";
    case PathClass::kPxb: return "PXB";
    case PathClass::kPhb: return "PHB";
    case PathClass::kNode: return "NODE";
    case PathClass::kSys: return "SYS";
  }
  return "?";
}

PathClass classifyPath(const Topology& t, DeviceRef a, DeviceRef b) {
  if (a.kind == b.kind && a.index == b.index) return PathClass::kLoc;
  if (a.kind == DeviceRef::Kind::kGpu && b.kind == DeviceRef::Kind::kGpu) {
    const std::vector<int>& peers = t.gpus[a.index].nvlink_peers;
    if (std::binary_search(peers.begin(), peers.end(), b.index)) return PathClass::kNvl;
  }
  Endpoint ea = endpointOf(t, a);
  Endpoint eb = endpointOf(t, b);
  // Two ports of one NIC function: as close as two devices get without being one.
  if (ea.pci >= 0 && ea.pci == eb.pci) return PathClass::kPix;
  int chain_a[kMaxBridges];
  int chain_b[kMaxBridges];
  int na = bridgesAbove(t, ea.pci, chain_a);
  int nb = bridgesAbove(t, eb.pci, chain_b);
  for (int i = 0; i < na; ++i) {
    for (int j = 0; j < nb; ++j) {
      if (chain_a[i] != chain_b[j]) continue;
      return i == j && i <= 1 ? PathClass::kPix : PathClass::kPxb;
    }
  }
  return classifyCpuSide(t, ea.anchor, eb.anchor);
}

}  // namespace psdp::topo
