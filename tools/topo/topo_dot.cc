#include "topo_dot.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "json_text.h"

namespace psdp::tools {
namespace {

// An NVLink group this large that is all-to-all (NVSwitch machines) is drawn as a hub: 8 edges, not 28.
constexpr size_t kMinHubSize = 4;

std::vector<size_t> gpuIndexes(const TopoReport& r) {
  std::vector<size_t> gpus;
  for (size_t i = 0; i < r.devices.size(); ++i) {
    if (r.devices[i].kind == PSDP_DEVICE_GPU) gpus.push_back(i);
  }
  return gpus;
}

void printNodes(const TopoReport& r, std::ostream& out) {
  std::map<int, std::vector<size_t>> by_numa;
  for (size_t i = 0; i < r.devices.size(); ++i) by_numa[r.devices[i].numa_node].push_back(i);
  for (const auto& [numa, members] : by_numa) {
    const bool cluster = numa >= 0;
    if (cluster) out << "  subgraph cluster_numa" << numa << " {\n    label=\"NUMA " << numa << "\";\n";
    for (size_t i : members) {
      const TopoDevice& d = r.devices[i];
      // Graphviz breaks a label line at \n; a JSON \u escape would show as text.
      std::string label = escaped(d.name) + (d.bus_id.empty() || d.bus_id == d.name ? "" : "\\n" + escaped(d.bus_id));
      out << (cluster ? "    " : "  ") << quoted(d.id) << " [label=\"" << label << "\""
          << (d.kind == PSDP_DEVICE_GPU ? ", shape=box, style=filled, fillcolor=palegreen"
                                        : ", shape=ellipse, style=filled, fillcolor=lightblue")
          << "];\n";
    }
    if (cluster) out << "  }\n";
  }
}

void edge(const TopoReport& r, size_t a, size_t b, std::ostream& out) {
  out << "  " << quoted(r.devices[a].id) << " -> " << quoted(r.devices[b].id) << " [label=\""
      << psdp_path_class_string(r.paths[a][b]) << "\"];\n";
}

// GPU pairs that meet below the CPU; all-to-all NVLink groups as one hub each.
void printGpuEdges(const TopoReport& r, std::ostream& out) {
  const std::vector<size_t> gpus = gpuIndexes(r);
  // Union-find over NVLink pairs: the groups that might be drawn as hubs.
  std::vector<size_t> root(gpus.size());
  std::iota(root.begin(), root.end(), 0);
  auto find = [&](size_t x) {
    while (root[x] != x) x = root[x] = root[root[x]];
    return x;
  };
  for (size_t a = 0; a < gpus.size(); ++a) {
    for (size_t b = a + 1; b < gpus.size(); ++b) {
      if (r.paths[gpus[a]][gpus[b]] == PSDP_PATH_NVL) root[find(a)] = find(b);
    }
  }
  std::map<size_t, std::vector<size_t>> groups;
  for (size_t a = 0; a < gpus.size(); ++a) groups[find(a)].push_back(a);
  std::vector<bool> in_hub(gpus.size(), false);
  int hubs = 0;
  for (const auto& [group_root, members] : groups) {
    bool all_to_all = members.size() >= kMinHubSize;
    for (size_t x : members) {
      for (size_t y : members) all_to_all = all_to_all && (x == y || r.paths[gpus[x]][gpus[y]] == PSDP_PATH_NVL);
    }
    if (!all_to_all) continue;
    const std::string hub = "nvlink" + std::to_string(hubs++);
    out << "  " << quoted(hub) << " [label=\"NVLink (all-to-all)\", shape=diamond];\n";
    for (size_t x : members) {
      in_hub[x] = true;
      out << "  " << quoted(r.devices[gpus[x]].id) << " -> " << quoted(hub) << " [label=\"NVL\"];\n";
    }
  }
  for (size_t a = 0; a < gpus.size(); ++a) {
    for (size_t b = a + 1; b < gpus.size(); ++b) {
      const psdp_path_class_t p = r.paths[gpus[a]][gpus[b]];
      if (p > PSDP_PATH_PXB || (p == PSDP_PATH_NVL && in_hub[a] && in_hub[b] && find(a) == find(b))) continue;
      edge(r, gpus[a], gpus[b], out);
    }
  }
}

// Each GPU to the NICs closest to it (all of them when several tie).
void printNicEdges(const TopoReport& r, std::ostream& out) {
  for (size_t g : gpuIndexes(r)) {
    psdp_path_class_t best = PSDP_PATH_CLASS_MAX_ENUM;
    for (size_t n = 0; n < r.devices.size(); ++n) {
      if (r.devices[n].kind == PSDP_DEVICE_NIC) best = std::min(best, r.paths[g][n]);
    }
    for (size_t n = 0; n < r.devices.size(); ++n) {
      if (r.devices[n].kind == PSDP_DEVICE_NIC && r.paths[g][n] == best) edge(r, g, n, out);
    }
  }
}

}  // namespace

void printTopoDot(const TopoReport& r, std::ostream& out) {
  out << "digraph topology {\n"
      << "  label="
      << quoted(r.origin + " (" + r.format +
                "): edges are GPU pairs closer than PHB and each GPU's "
                "closest NICs; clusters are NUMA nodes")
      << ";\n  labelloc=t;\n  edge [dir=none, fontsize=10];\n  node [fontsize=11];\n";
  printNodes(r, out);
  printGpuEdges(r, out);
  printNicEdges(r, out);
  out << "}\n";
}

}  // namespace psdp::tools
