// What hwloc 2.9 (Debian 12) cannot be handed although libxml2 finds the document well-formed: each check
// refuses, naming the file and line, a kind of input that fuzzing showed crashes or aborts hwloc's XML
// import (the inputs are in tests/fuzz/regressions/fuzz_topology).
#pragma once

#include <libxml/tree.h>

#include <string>

#include "base/status.h"

namespace psdp::topo {

// Errors (invalid argument naming `origin`): the root is not an hwloc 2 export (<topology version="2.x">:
// hwloc's import of its version-1 format dereferences null sets); a set attribute (cpuset, nodeset,
// complete_cpuset, ...) is not a bitmap as hwloc writes one (a leading comma fails an assertion); an object
// has a cpuset or nodeset without its complete_ twin (dereferenced null; fixed upstream in
// open-mpi/hwloc#783), or with members its complete_ twin lacks (dereferenced null).
Status checkHwlocDocument(const xmlDoc* doc, const std::string& origin);

}  // namespace psdp::topo
