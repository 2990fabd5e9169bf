#include "topo_options.h"

#include <charconv>

namespace psdp::tools {

const char* const kTopoUsage =
    "usage: psdp-topo [--file PATH] [--hosts N] [--ranks-per-host P] [--group G] [--json | --dot]\n"
    "Shows a machine's topology as psdp sees it and how psdp maps ranks onto N such machines.\n"
    "  --file PATH          an hwloc XML export (lstopo x.xml) or an NCCL topology file (NCCL_TOPO_FILE);\n"
    "                       default: PSDP_TOPO_FILE when set, else this machine (hwloc discovery)\n"
    "  --hosts N            simulated hosts like this one (default 1)\n"
    "  --ranks-per-host P   ranks on each host (default: its GPU count, or 1 without GPUs); rank r runs on\n"
    "                       host r / P with GPU r % P when the host has at least P GPUs, else CPU-only\n"
    "  --group G            shard group size, dividing N * P (default P)\n"
    "  --json               one JSON object: summary {origin, format, packages, numa_nodes, cores, gpus, nics},\n"
    "                       devices [{id, kind, index, name, bus_id, numa_node, fabric, speed_mbps}],\n"
    "                       path_matrix {devices, classes}, mapping {hosts, ranks_per_host, group_size,\n"
    "                       rank_layout, ranks [{rank, host, local_index, ring_position, gpu, gpu_bus_id, nic,\n"
    "                       nic_path, numa_node}], shard_groups, replica_groups}\n"
    "  --dot                a graphviz digraph of the devices, clustered by NUMA node, edges labelled by path\n"
    "                       class (render with: psdp-topo --dot | dot -Tsvg > topo.svg)\n"
    "Text output: a summary, the devices, the path-class matrix (like nvidia-smi topo -m) with a legend, and\n"
    "the mapping: each rank's host, position, GPU, NIC with its path class and NUMA node, then the groups.\n"
    "Exit status: 0 on success, 1 when the topology cannot be loaded or mapped, 2 for a bad command line.\n";

namespace {

// Counts are bounded so that N * P fits easily and the output stays something a person can read.
constexpr int kMaxCount = 1 << 16;

bool parseCount(const std::string& text, int* out) {
  int v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 1 || v > kMaxCount) return false;
  *out = v;
  return true;
}

// One option that takes a value (a known one); false with *error set when the value is bad.
bool applyOption(const std::string& opt, const std::string& value, TopoCommand* cmd, std::string* error) {
  bool ok = true;
  if (opt == "--file") {
    ok = !value.empty();
    cmd->file = value;
  } else if (opt == "--hosts") {
    ok = parseCount(value, &cmd->hosts);
  } else if (opt == "--ranks-per-host") {
    ok = parseCount(value, &cmd->ranks_per_host);
  } else if (opt == "--group") {
    ok = parseCount(value, &cmd->group_size);
  }
  if (!ok) {
    *error = "bad value '" + value + "' for " + opt +
             (opt == "--file" ? std::string(": a path") : ": a whole number from 1 to " + std::to_string(kMaxCount));
  }
  return ok;
}

}  // namespace

std::optional<TopoCommand> parseTopoCommand(const std::vector<std::string>& args, std::string* error) {
  TopoCommand cmd;
  bool json = false, dot = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--json") {
      json = true;
    } else if (a == "--dot") {
      dot = true;
    } else if (a == "-h" || a == "--help") {
      cmd.help = true;
      return cmd;
    } else if (a.rfind("--", 0) != 0) {
      *error = "unexpected argument " + a;
      return std::nullopt;
    } else if (a != "--file" && a != "--hosts" && a != "--ranks-per-host" && a != "--group") {
      *error = "unknown option " + a;
      return std::nullopt;
    } else if (i + 1 < args.size()) {
      if (!applyOption(a, args[++i], &cmd, error)) return std::nullopt;
    } else {
      *error = "option " + a + " needs a value";
      return std::nullopt;
    }
  }
  if (json && dot) {
    *error = "--json and --dot exclude each other";
    return std::nullopt;
  }
  cmd.format = json ? TopoFormat::kJson : dot ? TopoFormat::kDot : TopoFormat::kText;
  return cmd;
}

}  // namespace psdp::tools
