#include "topo_json.h"

#include <string>
#include <vector>

#include "json_text.h"

namespace psdp::tools {
namespace {

std::string intList(const std::vector<int>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

std::string listOfLists(const std::vector<std::vector<int>>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + intList(v[i]);
  return s + "]";
}

void printSummary(const TopoReport& r, std::ostream& out) {
  out << "\"summary\":{\"origin\":" << quoted(r.origin) << ",\"format\":" << quoted(r.format)
      << ",\"packages\":" << r.packages << ",\"numa_nodes\":" << r.numa_nodes << ",\"cores\":" << r.cores
      << ",\"gpus\":" << r.gpus << ",\"nics\":" << r.nics << "}";
}

void printDevices(const TopoReport& r, std::ostream& out) {
  out << ",\n\"devices\":[";
  for (size_t i = 0; i < r.devices.size(); ++i) {
    const TopoDevice& d = r.devices[i];
    out << (i ? ",\n " : "\n ") << "{\"id\":" << quoted(d.id) << ",\"kind\":\""
        << (d.kind == PSDP_DEVICE_GPU ? "gpu" : "nic") << "\",\"index\":" << d.index << ",\"name\":" << quoted(d.name)
        << ",\"bus_id\":" << quoted(d.bus_id) << ",\"numa_node\":" << d.numa_node
        << ",\"fabric\":" << (d.fabric ? "true" : "false") << ",\"speed_mbps\":" << d.speed_mbps << "}";
  }
  out << "]";
}

// classes[i][j] is the path class between devices[i] and devices[j] (device ids, in the order of "devices").
void printMatrix(const TopoReport& r, std::ostream& out) {
  out << ",\n\"path_matrix\":{\"devices\":[";
  for (size_t i = 0; i < r.devices.size(); ++i) out << (i ? "," : "") << quoted(r.devices[i].id);
  out << "],\"classes\":[";
  for (size_t i = 0; i < r.paths.size(); ++i) {
    out << (i ? ",\n  [" : "\n  [");
    for (size_t j = 0; j < r.paths[i].size(); ++j)
      out << (j ? "," : "") << quoted(psdp_path_class_string(r.paths[i][j]));
    out << "]";
  }
  out << "]}";
}

void printMapping(const TopoReport& r, std::ostream& out) {
  out << ",\n\"mapping\":{\"hosts\":" << r.hosts << ",\"ranks_per_host\":" << r.ranks_per_host
      << ",\"group_size\":" << r.group_size << ",\"rank_layout\":" << intList(r.layout) << ",\"ranks\":[";
  for (size_t rank = 0; rank < r.placements.size(); ++rank) {
    const psdp_rank_placement_t& p = r.placements[rank];
    const std::string gpu = gpuNameOf(r, p.gpu_bus_id);
    out << (rank ? ",\n " : "\n ") << "{\"rank\":" << rank << ",\"host\":" << p.host
        << ",\"local_index\":" << p.local_index << ",\"ring_position\":" << p.ring_position
        << ",\"gpu\":" << (gpu.empty() ? "null" : quoted(gpu)) << ",\"gpu_bus_id\":" << quoted(p.gpu_bus_id)
        << ",\"nic\":" << (p.nic[0] ? quoted(p.nic) : "null")
        << ",\"nic_path\":" << (p.nic[0] ? quoted(psdp_path_class_string(p.nic_path)) : "null")
        << ",\"numa_node\":" << p.numa_node << "}";
  }
  out << "],\n\"shard_groups\":" << listOfLists(shardGroups(r))
      << ",\n\"replica_groups\":" << listOfLists(replicaGroups(r)) << "}";
}

}  // namespace

void printTopoJson(const TopoReport& r, std::ostream& out) {
  out << "{";
  printSummary(r, out);
  printDevices(r, out);
  printMatrix(r, out);
  printMapping(r, out);
  out << "}\n";
}

}  // namespace psdp::tools
