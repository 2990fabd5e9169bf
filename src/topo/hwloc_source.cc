#include "topo/hwloc_source.h"

#include <cerrno>
#include <string>
#include <utility>

#include "base/log.h"
#include "topo/hwloc_handle.h"
#include "topo/hwloc_import.h"
#include "topo/hwloc_xml_checks.h"
#include "topo/xml_document.h"

namespace psdp::topo {

Result<Topology> discoverWithHwloc() {
  // KEEP_IMPORTANT keeps GPUs, NICs and the bridges above them and skips the rest of the PCI bus, which on a
  // large server is most of the discovery time.
  PSDP_ASSIGN_OR_RETURN(HwlocTopology hwloc, makeHwlocTopology(HWLOC_TYPE_FILTER_KEEP_IMPORTANT));
  // On Linux, hwloc's own sysfs backend finds every PCI function with its class and ids; the libpciaccess
  // plugin (Debian's libhwloc-plugins) adds nothing here but time and a leak inside libpciaccess on every load.
  // Excluding it is an optimisation, never a reason to fail: without that package no component is named
  // "pci" and hwloc refuses with EINVAL, and then there is nothing to exclude.
  errno = 0;
  if (hwloc_topology_set_components(hwloc.get(), HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "pci") != 0) {
    processLog().debug("hwloc's pci component not excluded ({}); discovery goes on",
                       hwlocCheck(-1, "hwloc_topology_set_components").toString());
  }
  errno = 0;
  PSDP_RETURN_IF_ERROR(hwlocCheck(hwloc_topology_load(hwloc.get()), "hwloc_topology_load"));
  return importHwloc(hwloc.get(), TopologySource::kLiveMachine, "live machine");
}

Result<Topology> readHwlocXml(std::string_view text, std::string origin) {
  // Well-formed first (topo/xml_document.h): a malformed document is named with its line and never reaches
  // hwloc's reader, which leaks on one; then free of what crashes hwloc's import (topo/hwloc_xml_checks.h).
  PSDP_ASSIGN_OR_RETURN(XmlDocument doc, parseXmlDocument(text, origin));
  PSDP_RETURN_IF_ERROR(checkHwlocDocument(doc.get(), origin));
  // KEEP_ALL: XML import drops I/O objects unless told otherwise, and the bridges matter for path classes.
  PSDP_ASSIGN_OR_RETURN(HwlocTopology hwloc, makeHwlocTopology(HWLOC_TYPE_FILTER_KEEP_ALL));
  // The whole machine the file describes, not the part its exporting process was allowed to use: psdp
  // places ranks on the host, and restricting to a fuzzed allowed set that excludes every PU leaves an
  // empty topology that hwloc 2.9 dereferences null on.
  errno = 0;
  PSDP_RETURN_IF_ERROR(hwlocCheck(hwloc_topology_set_flags(hwloc.get(), HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED),
                                  "hwloc_topology_set_flags"));
  // hwloc wants the terminating NUL inside the buffer, as its own exports produce.
  std::string buffer(text);
  errno = 0;
  if (hwloc_topology_set_xmlbuffer(hwloc.get(), buffer.c_str(), static_cast<int>(buffer.size() + 1)) != 0 ||
      hwloc_topology_load(hwloc.get()) != 0) {
    return Status::invalidArgument("{}: hwloc cannot import this XML topology", origin);
  }
  return importHwloc(hwloc.get(), TopologySource::kHwlocXml, std::move(origin));
}

}  // namespace psdp::topo
