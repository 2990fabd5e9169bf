// How two devices of one machine reach each other, in NCCL's vocabulary (what `nvidia-smi topo -m` prints):
// the class decides which GPU pairs form a shard group and which NIC a GPU should use.
#pragma once

#include <cstdint>

#include "topo/topology.h"

namespace psdp::topo {

// Best first: a smaller value is a closer path.
enum class PathClass : uint8_t {
  kLoc,   // the same device
  kNvl,   // NVLink, directly or through NVSwitches (GPU pairs only)
  kPix,   // one PCIe switch: siblings under one bridge, or on two downstream ports of one switch
  kPxb,   // several PCIe bridges, without crossing the CPU
  kPhb,   // through the CPU root complex that both PCI trees hang off
  kNode,  // between PCI trees of different CPU objects within one NUMA node
  kSys,   // across NUMA nodes or sockets (the SMP interconnect)
};

// "LOC", "NVL", "PIX", "PXB", "PHB", "NODE", "SYS".
const char* pathClassName(PathClass path);

struct DeviceRef {
  enum class Kind : uint8_t { kGpu, kNic };
  Kind kind = Kind::kGpu;
  int index = 0;  // into Topology::gpus or Topology::nics

  static DeviceRef gpu(int index) { return DeviceRef{Kind::kGpu, index}; }
  static DeviceRef nic(int index) { return DeviceRef{Kind::kNic, index}; }
};

// REQUIRES: both references are in range. Symmetric; allocation-free.
//
// Rules, walking parent links only (hwloc's common-ancestor helper crashes on I/O objects at different PCI
// depths): NVL when both are GPUs and NVLink peers. Otherwise find the lowest PCI bridge above both: met
// directly under it, or one downstream port below it on each side (the two ports of one switch), is PIX; met
// higher up is PXB. With no common bridge the CPU side decides: the same anchor is PHB (NCCL counts every path
// through one CPU as PHB, so on POWER9 two host bridges of one socket are PHB, not NODE), anchors sharing a
// NUMA node are NODE, anything else SYS.
PathClass classifyPath(const Topology& topology, DeviceRef a, DeviceRef b);

}  // namespace psdp::topo
