#include "topo_report.h"

#include <memory>

namespace psdp::tools {
namespace {

struct TopologyFree {
  void operator()(psdp_topology_h t) const { (void)psdp_topology_free(t); }
};
using Topology = std::unique_ptr<psdp_topology, TopologyFree>;

bool failed(psdp_status_t status, const std::string& what, std::string* error) {
  if (status == PSDP_SUCCESS) return false;
  *error = what + ": " + psdp_get_last_error(nullptr);
  return true;
}

bool readDevices(psdp_topology_h topo, TopoReport* report, std::string* error) {
  for (psdp_device_kind_t kind : {PSDP_DEVICE_GPU, PSDP_DEVICE_NIC}) {
    int count = 0;
    if (failed(psdp_topology_device_count(topo, kind, &count), "device count", error)) return false;
    for (int i = 0; i < count; ++i) {
      psdp_device_info_t info;
      if (failed(psdp_topology_get_device(topo, kind, i, &info), "device", error)) return false;
      TopoDevice d;
      d.kind = kind;
      d.index = i;
      d.id = (kind == PSDP_DEVICE_GPU ? "GPU" : "NIC") + std::to_string(i);
      d.name = info.name;
      d.bus_id = info.bus_id;
      d.numa_node = info.numa_node;
      d.fabric = info.fabric != 0;
      d.speed_mbps = info.speed_mbps;
      report->devices.push_back(d);
    }
  }
  const size_t n = report->devices.size();
  report->paths.assign(n, std::vector<psdp_path_class_t>(n, PSDP_PATH_SYS));
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      const TopoDevice& a = report->devices[i];
      const TopoDevice& b = report->devices[j];
      if (failed(psdp_topology_path(topo, a.kind, a.index, b.kind, b.index, &report->paths[i][j]), "path", error)) {
        return false;
      }
    }
  }
  return true;
}

// Fills in the defaults that depend on the machine and checks what the command line could not.
bool chooseShape(const TopoCommand& cmd, TopoReport* report, std::string* error) {
  report->hosts = cmd.hosts;
  report->ranks_per_host = cmd.ranks_per_host > 0 ? cmd.ranks_per_host : report->gpus > 0 ? report->gpus : 1;
  report->group_size = cmd.group_size > 0 ? cmd.group_size : report->ranks_per_host;
  const long long world = static_cast<long long>(report->hosts) * report->ranks_per_host;
  if (world > (1 << 20)) {
    *error = "--hosts " + std::to_string(report->hosts) + " x --ranks-per-host " +
             std::to_string(report->ranks_per_host) + " is over 1048576 ranks";
    return false;
  }
  if (world % report->group_size != 0) {
    *error = "--group " + std::to_string(report->group_size) + " does not divide the " + std::to_string(world) +
             " ranks (--hosts " + std::to_string(report->hosts) + " x --ranks-per-host " +
             std::to_string(report->ranks_per_host) + ")";
    return false;
  }
  return true;
}

}  // namespace

bool buildTopoReport(const TopoCommand& cmd, TopoReport* report, std::string* error, bool* usage_error) {
  *usage_error = false;
  psdp_topology_h raw = nullptr;
  if (failed(psdp_topology_load(cmd.file.empty() ? nullptr : cmd.file.c_str(), &raw), "cannot load the topology",
             error)) {
    return false;
  }
  Topology topo(raw);
  psdp_topology_summary_t s;
  if (failed(psdp_topology_get_summary(topo.get(), &s), "summary", error)) return false;
  report->origin = s.origin;
  report->format = s.format;
  report->packages = s.packages;
  report->numa_nodes = s.numa_nodes;
  report->cores = s.cores;
  report->gpus = s.gpus;
  report->nics = s.nics;
  if (!readDevices(topo.get(), report, error)) return false;
  if (!chooseShape(cmd, report, error)) {
    *usage_error = true;
    return false;
  }
  const size_t world = static_cast<size_t>(report->hosts) * report->ranks_per_host;
  report->layout.assign(world, 0);
  report->placements.assign(world, psdp_rank_placement_t{});
  return !failed(psdp_topology_map(topo.get(), report->hosts, report->ranks_per_host, report->group_size,
                                   report->layout.data(), report->placements.data()),
                 "cannot map the ranks", error);
}

std::vector<std::vector<int>> shardGroups(const TopoReport& report) {
  const int g = report.group_size;
  std::vector<std::vector<int>> groups(g > 0 ? report.layout.size() / g : 0);
  for (size_t k = 0; k < groups.size(); ++k) groups[k].assign(&report.layout[k * g], &report.layout[k * g] + g);
  return groups;
}

std::vector<std::vector<int>> replicaGroups(const TopoReport& report) {
  const std::vector<std::vector<int>> shards = shardGroups(report);
  std::vector<std::vector<int>> replicas(report.group_size > 0 ? report.group_size : 0);
  for (const std::vector<int>& shard : shards) {
    for (size_t g = 0; g < shard.size(); ++g) replicas[g].push_back(shard[g]);
  }
  return replicas;
}

std::string gpuNameOf(const TopoReport& report, const char* bus_id) {
  if (bus_id[0] == '\0') return "";
  for (const TopoDevice& d : report.devices) {
    if (d.kind == PSDP_DEVICE_GPU && d.bus_id == bus_id) return d.name;
  }
  return bus_id;
}

}  // namespace psdp::tools
