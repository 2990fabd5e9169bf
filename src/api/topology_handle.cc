#include "api/topology_handle.h"

#include <memory>

#include "api/live_handles.h"

namespace psdp::api {
namespace {

using LiveTopologies = LiveHandles<psdp_topology_h>;

}  // namespace

psdp_topology_h adoptTopology(topo::Topology topology) {
  auto handle = std::make_unique<psdp_topology>(psdp_topology{std::move(topology)});
  LiveTopologies::instance().add(handle.get());
  return handle.release();
}

Status checkTopology(psdp_topology_h topo, const char* arg_name) {
  if (topo == nullptr) return Status::invalidArgument("{} is NULL", arg_name);
  if (!LiveTopologies::instance().contains(topo)) {
    return Status::invalidUsage("{} is not a live topology (freed, or not made by psdp_topology_load)", arg_name);
  }
  return Status::ok();
}

Status freeTopology(psdp_topology_h topo) {
  if (topo == nullptr) return Status::invalidArgument("topo is NULL");
  if (!LiveTopologies::instance().remove(topo)) {
    return Status::invalidUsage("topo is not a live topology (freed already, or not made by psdp_topology_load)");
  }
  delete topo;
  return Status::ok();
}

}  // namespace psdp::api
