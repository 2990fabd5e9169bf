// NCCL's topology file format (NCCL_TOPO_FILE; what NCCL_TOPO_DUMP_FILE writes) as a topology source. hwloc
// cannot read it, and the cloud images ship their machines' layouts only in this form.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "topo/topology.h"

namespace psdp::topo {

// Maps the file onto the model:
//   <cpu numaid>         a NUMA node and the CPU anchor of everything inside it (no packages or cores: the
//                        format does not describe them)
//   <pci> with children  a PCIe switch (NCCL's virtual switches `ffff:ff:0N.0` included)
//   <pci> leaf           a function; a GPU by class and vendor (or a <gpu> child; vendor defaults to NVIDIA,
//                        which is all NCCL describes), a NIC by network class, one per <net> when listed
//   <nic> under <cpu>    NICs with no PCI function, one per <net>
//   <nvlink target>      NVLink peers: directly to a GPU's bus id, or through a shared NVSwitch target
// Errors (PSDP_ERR_INVALID_ARGUMENT, naming the origin and line): malformed XML, a root other than <system>,
// no <cpu>, a <cpu> without a numeric numaid, a <pci> without busid.
Result<Topology> readNcclXml(std::string_view text, std::string origin);

}  // namespace psdp::topo
