// Topology files parsed with libxml2, the one XML reader of the topology room: NCCL's format is read from its
// tree, and hwloc documents are checked with it before hwloc imports them. libxml2 reports the first error
// with its line; hwloc's own reader (used when Debian's libhwloc-plugins, with hwloc's libxml2 plugin, is not
// installed) leaks the objects it had built when a document breaks off, and names no line.
#pragma once

#include <libxml/tree.h>

#include <memory>
#include <string>
#include <string_view>

#include "base/raii.h"
#include "base/status.h"

namespace psdp::topo {

using XmlDocument = std::unique_ptr<xmlDoc, FnDeleter<xmlFreeDoc>>;

// Parses `text` with the network disabled and entities left unexpanded. Errors: invalid argument naming
// `origin` and, where libxml2 gives one, the line of the first error ("<origin>:12: malformed XML: ..."), or
// saying that the XML declaration names an encoding other than UTF-8 or ASCII.
Result<XmlDocument> parseXmlDocument(std::string_view text, const std::string& origin);

}  // namespace psdp::topo
