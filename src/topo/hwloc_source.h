// hwloc as a topology source: discovery of the live machine and import of hwloc XML.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "topo/topology.h"

namespace psdp::topo {

Result<Topology> discoverWithHwloc();

// Errors: hwloc rejects the document (PSDP_ERR_INVALID_ARGUMENT).
Result<Topology> readHwlocXml(std::string_view text, std::string origin);

}  // namespace psdp::topo
