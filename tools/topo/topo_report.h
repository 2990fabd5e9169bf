// Everything psdp-topo prints, gathered once through the public C API, so that the text, JSON and dot
// printers only format it.
#pragma once

#include <psdp/psdp.h>

#include <cstdint>
#include <string>
#include <vector>

#include "topo_options.h"

namespace psdp::tools {

struct TopoDevice {
  psdp_device_kind_t kind = PSDP_DEVICE_GPU;
  int index = 0;   // among the devices of its kind
  std::string id;  // "GPU0", "NIC1": unique even where names repeat
  std::string name;
  std::string bus_id;
  int numa_node = -1;
  bool fabric = false;
  uint64_t speed_mbps = 0;
};

struct TopoReport {
  std::string origin;
  std::string format;
  int packages = 0;
  int numa_nodes = 0;
  int cores = 0;
  int gpus = 0;
  int nics = 0;
  std::vector<TopoDevice> devices;                    // GPUs, then NICs
  std::vector<std::vector<psdp_path_class_t>> paths;  // paths[i][j] between devices i and j
  int hosts = 0;
  int ranks_per_host = 0;
  int group_size = 0;
  std::vector<int> layout;                        // rank_layout[k * G + g]: member g of shard group k
  std::vector<psdp_rank_placement_t> placements;  // by rank
};

// Loads the topology cmd names and maps cmd's ranks onto it. False with *error set (the library's message,
// which names the file) when it cannot; *usage_error tells a bad --group or --ranks-per-host (exit 2) apart.
bool buildTopoReport(const TopoCommand& cmd, TopoReport* report, std::string* error, bool* usage_error);

// Shard group k: layout[k*G .. k*G + G). Replica group g: member g of every shard group.
std::vector<std::vector<int>> shardGroups(const TopoReport& report);
std::vector<std::vector<int>> replicaGroups(const TopoReport& report);

// The GPU's name for a placement's bus id, the bus id itself when no GPU has it, "" for CPU-only.
std::string gpuNameOf(const TopoReport& report, const char* bus_id);

}  // namespace psdp::tools
