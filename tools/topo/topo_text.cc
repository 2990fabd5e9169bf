#include "topo_text.h"

#include <string>
#include <vector>

#include "text_table.h"

namespace psdp::tools {

const PathLegend kPathLegend[7] = {
    {PSDP_PATH_LOC, "the same device"},
    {PSDP_PATH_NVL, "NVLink, directly or through NVSwitches"},
    {PSDP_PATH_PIX, "one PCIe switch"},
    {PSDP_PATH_PXB, "several PCIe switches, without crossing the CPU"},
    {PSDP_PATH_PHB, "through the CPU's PCIe host bridge"},
    {PSDP_PATH_NODE, "between host bridges of one NUMA node"},
    {PSDP_PATH_SYS, "across NUMA nodes or sockets"},
};

namespace {

std::string orDash(const std::string& s) {
  return s.empty() ? "-" : s;
}

std::string numaText(int numa) {
  return numa < 0 ? "-" : std::to_string(numa);
}

std::string plural(int n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string joined(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : " ") + std::to_string(r);
  return s;
}

void printDevices(const TopoReport& r, std::ostream& out) {
  if (r.devices.empty()) {
    out << "devices: none (no GPU or NIC: ranks run CPU-only and need no NIC on one host)\n";
    return;
  }
  std::vector<std::vector<std::string>> rows = {{"id", "name", "bus id", "NUMA", "link", "speed"}};
  for (const TopoDevice& d : r.devices) {
    const bool nic = d.kind == PSDP_DEVICE_NIC;
    rows.push_back({d.id, d.name, orDash(d.bus_id), numaText(d.numa_node),
                    nic ? (d.fabric ? "fabric" : "ethernet") : "-",
                    d.speed_mbps ? std::to_string(d.speed_mbps) + " Mb/s" : "-"});
  }
  out << "devices:\n";
  printTable(rows, "  ", out);
}

// Names head the matrix, but an NCCL file names GPUs by bus id and 16 columns of those would not fit a
// terminal: a long name is replaced by the device's id in the list above (GPU0, NIC3), as nvidia-smi does.
constexpr size_t kMaxHeading = 10;

std::string heading(const TopoReport& r, size_t i) {
  const TopoDevice& d = r.devices[i];
  return d.name.size() > kMaxHeading ? d.id : d.name;
}

// Rows and columns are every device (GPUs, then NICs), like `nvidia-smi topo -m`.
void printMatrix(const TopoReport& r, std::ostream& out) {
  if (r.devices.empty()) return;
  std::vector<std::vector<std::string>> rows(1, std::vector<std::string>{""});
  for (size_t i = 0; i < r.devices.size(); ++i) rows[0].push_back(heading(r, i));
  for (size_t i = 0; i < r.devices.size(); ++i) {
    rows.push_back({heading(r, i)});
    for (size_t j = 0; j < r.devices.size(); ++j) rows.back().push_back(psdp_path_class_string(r.paths[i][j]));
  }
  out << "\npaths:\n";
  printTable(rows, "  ", out);
  out << "\nlegend:\n";
  std::vector<std::vector<std::string>> legend;
  for (const PathLegend& l : kPathLegend) legend.push_back({psdp_path_class_string(l.path), l.meaning});
  printTable(legend, "  ", out);
}

void printRanks(const TopoReport& r, std::ostream& out) {
  const int world = static_cast<int>(r.placements.size());
  out << "\nmapping: " << plural(r.hosts, "host", "hosts") << " x "
      << plural(r.ranks_per_host, "rank per host", "ranks per host") << " = " << plural(world, "rank", "ranks")
      << ", shard groups of " << r.group_size << "\n";
  std::vector<std::vector<std::string>> rows = {{"rank", "host", "local", "ring", "GPU", "NIC", "path", "NUMA"}};
  for (int rank = 0; rank < world; ++rank) {
    const psdp_rank_placement_t& p = r.placements[rank];
    const bool has_nic = p.nic[0] != '\0';
    rows.push_back({std::to_string(rank), std::to_string(p.host), std::to_string(p.local_index),
                    std::to_string(p.ring_position), orDash(gpuNameOf(r, p.gpu_bus_id)), orDash(p.nic),
                    has_nic ? psdp_path_class_string(p.nic_path) : "-", numaText(p.numa_node)});
  }
  printTable(rows, "  ", out);
}

void printGroups(const TopoReport& r, std::ostream& out) {
  const std::vector<std::vector<int>> shards = shardGroups(r);
  out << "\nshard groups (" << shards.size() << ", each shards the state " << plural(r.group_size, "way", "ways")
      << "):\n";
  for (size_t k = 0; k < shards.size(); ++k) out << "  " << k << ": " << joined(shards[k]) << "\n";
  const std::vector<std::vector<int>> replicas = replicaGroups(r);
  out << "replica groups (" << replicas.size() << ", member g of every shard group):\n";
  for (size_t g = 0; g < replicas.size(); ++g) out << "  " << g << ": " << joined(replicas[g]) << "\n";
}

}  // namespace

void printTopoText(const TopoReport& r, std::ostream& out) {
  out << "topology: " << r.origin << " (" << r.format << "): " << plural(r.packages, "package", "packages") << ", "
      << plural(r.numa_nodes, "NUMA node", "NUMA nodes") << ", " << plural(r.cores, "core", "cores") << ", "
      << plural(r.gpus, "GPU", "GPUs") << ", " << plural(r.nics, "NIC", "NICs") << "\n\n";
  printDevices(r, out);
  printMatrix(r, out);
  printRanks(r, out);
  printGroups(r, out);
}

}  // namespace psdp::tools
