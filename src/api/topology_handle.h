// What a psdp_topology_h points to, and its registry of live handles: a freed or foreign topology is refused
// (invalid usage), never dereferenced, as plans and communicators are.
#pragma once

#include <psdp/psdp.h>

#include "base/status.h"
#include "topo/topology.h"

struct psdp_topology {
  // Immutable once adopted: the strings psdp_topology_get_summary and _get_device return point into it.
  psdp::topo::Topology impl;
};

namespace psdp::api {

// Makes `topology` a live handle.
psdp_topology_h adoptTopology(topo::Topology topology);
// OK for a live topology; invalid argument for NULL, invalid usage for a freed or foreign one.
Status checkTopology(psdp_topology_h topo, const char* arg_name);
// Forgets and deletes a live topology. Errors as checkTopology.
Status freeTopology(psdp_topology_h topo);

}  // namespace psdp::api
