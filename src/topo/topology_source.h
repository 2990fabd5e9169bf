// Where a Topology comes from: hwloc discovery of this machine, or a saved file, either an hwloc XML export
// (lstopo foo.xml) or an NCCL topology file (NCCL_TOPO_FILE, <system version="1">). The format is told by the
// document's root element, not by the file name.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "topo/topology.h"

namespace psdp::topo {

enum class TopologyFormat : uint8_t { kHwlocXml, kNcclXml };

// Discovers this machine with hwloc, keeping only the I/O objects hwloc deems important (GPUs, NICs, the
// bridges above them), which keeps discovery fast. A machine without GPUs or NICs gives a model with empty
// gpus/nics: the CPU-only case, not an error. Errors: hwloc fails to initialise or load (PSDP_ERR_SYSTEM).
Result<Topology> discoverMachine();

// Reads a topology file. Errors: the file cannot be read (PSDP_ERR_SYSTEM); it is not XML, its root element
// is neither <topology> nor <system>, or it is malformed (PSDP_ERR_INVALID_ARGUMENT); every message names
// the file.
Result<Topology> loadTopologyFile(const std::string& path);

// The same from a file's contents; `origin` names it in errors and in Topology::origin.
Result<Topology> parseTopology(std::string_view text, std::string origin);

// The format of a document by its root element. Errors: no root element, or an unknown one (an NCCL graph
// file, <graphs>, is named as such).
Result<TopologyFormat> detectTopologyFormat(std::string_view text);

}  // namespace psdp::topo
