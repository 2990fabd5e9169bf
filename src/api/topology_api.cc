// The C boundary for topologies: argument checks and translation of topo::Topology into the public structs.
#include <string>

#include "api/guard.h"
#include "api/placement_args.h"
#include "api/topology_handle.h"
#include "api/topology_mapping.h"
#include "api/validate.h"
#include "base/config.h"
#include "base/environment.h"
#include "topo/path_class.h"
#include "topo/topology_source.h"

using psdp::Result;
using psdp::Status;
using psdp::api::adoptTopology;
using psdp::api::checkOut;
using psdp::api::checkTopology;
using psdp::api::guarded;
namespace topo = psdp::topo;

namespace {

// PSDP_TOPO_FILE (the configuration parameter communicators use too) names a saved topology to use instead of
// the live machine (a login node preparing a job for GPU nodes, or tests); empty means the live machine.
Result<topo::Topology> loadDefault() {
  PSDP_ASSIGN_OR_RETURN(psdp::Config config, psdp::Config::resolve(nullptr, psdp::ProcessEnvironment::instance()));
  if (config.topo_file.empty()) return topo::discoverMachine();
  Result<topo::Topology> loaded = topo::loadTopologyFile(config.topo_file);
  if (!loaded.isOk()) return loaded.status().withContext("PSDP_TOPO_FILE");
  return loaded;
}

const char* formatName(topo::TopologySource source) {
  switch (source) {
    case topo::TopologySource::kLiveMachine: return "live";
    case topo::TopologySource::kHwlocXml: return "hwloc-xml";
    case topo::TopologySource::kNcclXml: return "nccl-xml";
  }
  return "unknown";
}

// The enum arrives from C as any int; read it as one before comparing.
Status checkKind(psdp_device_kind_t kind, const char* arg_name) {
  const int k = static_cast<int>(kind);
  if (k != PSDP_DEVICE_GPU && k != PSDP_DEVICE_NIC) {
    return Status::invalidArgument("{} {} is not a psdp_device_kind_t (PSDP_DEVICE_GPU or PSDP_DEVICE_NIC)", arg_name,
                                   k);
  }
  return Status::ok();
}

int deviceCount(const topo::Topology& t, psdp_device_kind_t kind) {
  return static_cast<int>(kind == PSDP_DEVICE_GPU ? t.gpus.size() : t.nics.size());
}

// A device reference after checking its kind and index (both named as the caller called them).
Result<topo::DeviceRef> deviceRef(const topo::Topology& t, psdp_device_kind_t kind, const char* kind_name, int index,
                                  const char* index_name) {
  PSDP_RETURN_IF_ERROR(checkKind(kind, kind_name));
  const int count = deviceCount(t, kind);
  if (index < 0 || index >= count) {
    return Status::invalidArgument("{} {} is outside [0, {}): the topology has {} {}", index_name, index, count, count,
                                   kind == PSDP_DEVICE_GPU ? "GPUs" : "NICs");
  }
  return kind == PSDP_DEVICE_GPU ? topo::DeviceRef::gpu(index) : topo::DeviceRef::nic(index);
}

// The os index of the first NUMA node local to the CPU object a device's PCI tree hangs off.
int deviceNuma(const topo::Topology& t, int anchor) {
  if (anchor < 0 || t.anchors[anchor].numa.empty()) return -1;
  return t.numa_nodes[t.anchors[anchor].numa.front()].os_index;
}

const char* busId(const topo::Topology& t, int pci) {
  return pci >= 0 ? t.pci[pci].bus_id.c_str() : "";
}

psdp_device_info_t deviceInfo(const topo::Topology& t, topo::DeviceRef ref) {
  if (ref.kind == topo::DeviceRef::Kind::kGpu) {
    const topo::Gpu& g = t.gpus[ref.index];
    return psdp_device_info_t{g.name.c_str(), busId(t, g.pci), deviceNuma(t, g.anchor), 0, 0};
  }
  const topo::Nic& n = t.nics[ref.index];
  return psdp_device_info_t{n.name.c_str(), busId(t, n.pci), deviceNuma(t, n.anchor),
                            n.kind == topo::NicKind::kFabric ? 1 : 0, n.speed_mbps};
}

}  // namespace

extern "C" {

PSDP_API const char* psdp_path_class_string(psdp_path_class_t path) {
  const int p = static_cast<int>(path);
  if (p < PSDP_PATH_LOC || p > PSDP_PATH_SYS) return "unknown";
  return topo::pathClassName(static_cast<topo::PathClass>(p));
}

PSDP_API psdp_status_t psdp_topology_load(const char* path, psdp_topology_h* topo_p) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkOut(topo_p, "topo_p"));
    if (path != nullptr && *path == '\0') {
      return Status::invalidArgument("path is empty (NULL loads PSDP_TOPO_FILE or the live machine)");
    }
    PSDP_ASSIGN_OR_RETURN(topo::Topology topology, path ? topo::loadTopologyFile(path) : loadDefault());
    *topo_p = adoptTopology(std::move(topology));
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_topology_free(psdp_topology_h topo) {
  return guarded(nullptr, [&] { return psdp::api::freeTopology(topo); });
}

PSDP_API psdp_status_t psdp_topology_get_summary(psdp_topology_h topo, psdp_topology_summary_t* summary_p) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkTopology(topo, "topo"));
    PSDP_RETURN_IF_ERROR(checkOut(summary_p, "summary_p"));
    const topo::Topology& t = topo->impl;
    *summary_p = psdp_topology_summary_t{t.origin.c_str(),
                                         formatName(t.source),
                                         static_cast<int>(t.packages.size()),
                                         static_cast<int>(t.numa_nodes.size()),
                                         static_cast<int>(t.cores.size()),
                                         static_cast<int>(t.gpus.size()),
                                         static_cast<int>(t.nics.size())};
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_topology_device_count(psdp_topology_h topo, psdp_device_kind_t kind, int* count_p) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkTopology(topo, "topo"));
    PSDP_RETURN_IF_ERROR(checkKind(kind, "kind"));
    PSDP_RETURN_IF_ERROR(checkOut(count_p, "count_p"));
    *count_p = deviceCount(topo->impl, kind);
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_topology_get_device(psdp_topology_h topo, psdp_device_kind_t kind, int index,
                                                psdp_device_info_t* info_p) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkTopology(topo, "topo"));
    PSDP_ASSIGN_OR_RETURN(topo::DeviceRef ref, deviceRef(topo->impl, kind, "kind", index, "index"));
    PSDP_RETURN_IF_ERROR(checkOut(info_p, "info_p"));
    *info_p = deviceInfo(topo->impl, ref);
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_topology_path(psdp_topology_h topo, psdp_device_kind_t kind_a, int a,
                                          psdp_device_kind_t kind_b, int b, psdp_path_class_t* path_p) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkTopology(topo, "topo"));
    PSDP_ASSIGN_OR_RETURN(topo::DeviceRef ref_a, deviceRef(topo->impl, kind_a, "kind_a", a, "a"));
    PSDP_ASSIGN_OR_RETURN(topo::DeviceRef ref_b, deviceRef(topo->impl, kind_b, "kind_b", b, "b"));
    PSDP_RETURN_IF_ERROR(checkOut(path_p, "path_p"));
    *path_p = psdp::api::toPublicPathClass(topo::classifyPath(topo->impl, ref_a, ref_b));
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_topology_map(psdp_topology_h topo, int hosts, int ranks_per_host, int group_size,
                                         int* rank_layout, psdp_rank_placement_t* placements) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkTopology(topo, "topo"));
    return psdp::api::mapTopology(topo->impl, hosts, ranks_per_host, group_size, rank_layout, placements);
  });
}

}  // extern "C"
