// Topology files (PSDP_TOPO_FILE: an hwloc XML export or an NCCL topology file), parsed by hwloc and
// libxml2 and then read by psdp's own importers. A file either loads or gets an error; nothing crashes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "topo/topology_source.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)psdp::topo::parseTopology(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz input");
  return 0;
}
