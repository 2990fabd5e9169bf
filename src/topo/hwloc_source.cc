#include "topo/hwloc_source.h"

#include <cerrno>
#include <string>
#include <string_view>
#include <utility>

#include "base/log.h"
#include "topo/hwloc_handle.h"
#include "topo/hwloc_import.h"
#include "topo/xml_document.h"

namespace psdp::topo {
namespace {

bool hasAttribute(const xmlNode* node, const char* name) {
  return xmlHasProp(node, reinterpret_cast<const xmlChar*>(name)) != nullptr;
}

// What hwloc 2.9's XML import crashes on although the document is well-formed: an object with a cpuset
// but no complete_cpuset (or a nodeset but no complete_nodeset) passes its checks and is then dereferenced
// while siblings are sorted (fixed upstream in open-mpi/hwloc#783). hwloc's own exports always write the
// sets in pairs, so such a document is refused here, naming the line.
Status checkObjectSets(const xmlNode* node, const std::string& origin) {
  for (; node != nullptr; node = node->next) {
    if (node->type != XML_ELEMENT_NODE) continue;
    if (xmlStrcmp(node->name, reinterpret_cast<const xmlChar*>("object")) == 0) {
      for (auto [set, complete] : {std::pair{"cpuset", "complete_cpuset"}, std::pair{"nodeset", "complete_nodeset"}}) {
        if (hasAttribute(node, set) && !hasAttribute(node, complete)) {
          return Status::invalidArgument("{}:{}: an object has a {} but no {} (hwloc writes both)", origin,
                                         xmlGetLineNo(node), set, complete);
        }
      }
    }
    PSDP_RETURN_IF_ERROR(checkObjectSets(node->children, origin));
  }
  return Status::ok();
}

// hwloc 2 exports say <topology version="2.0">; a document without it goes through hwloc's import of the
// hwloc 1 format, which dereferences null sets on fuzzed input. Only hwloc 2 documents are read.
Status checkHwlocDocument(const xmlDoc* doc, const std::string& origin) {
  const xmlNode* root = xmlDocGetRootElement(doc);
  xmlChar* version = root != nullptr ? xmlGetProp(root, reinterpret_cast<const xmlChar*>("version")) : nullptr;
  const bool hwloc2 = version != nullptr && std::string_view(reinterpret_cast<const char*>(version)).starts_with("2.");
  xmlFree(version);
  if (!hwloc2) {
    return Status::invalidArgument(
        "{}: not an hwloc 2 export (<topology version=\"2.0\">); export it again with hwloc 2's lstopo", origin);
  }
  return checkObjectSets(root, origin);
}

}  // namespace

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
  // hwloc's reader, which leaks on one; then free of what crashes hwloc's import.
  PSDP_ASSIGN_OR_RETURN(XmlDocument doc, parseXmlDocument(text, origin));
  PSDP_RETURN_IF_ERROR(checkHwlocDocument(doc.get(), origin));
  // KEEP_ALL: XML import drops I/O objects unless told otherwise, and the bridges matter for path classes.
  PSDP_ASSIGN_OR_RETURN(HwlocTopology hwloc, makeHwlocTopology(HWLOC_TYPE_FILTER_KEEP_ALL));
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
