// psdp-topo's command line.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace psdp::tools {

enum class TopoFormat { kText, kJson, kDot };

struct TopoCommand {
  std::string file;        // empty: PSDP_TOPO_FILE, else the live machine
  int hosts = 1;           // simulated hosts like this one
  int ranks_per_host = 0;  // 0: the number of GPUs, or 1 without GPUs
  int group_size = 0;      // 0: ranks_per_host
  TopoFormat format = TopoFormat::kText;
  bool help = false;
};

extern const char* const kTopoUsage;

// Parses argv[1..]; on a bad option returns nullopt and sets *error.
std::optional<TopoCommand> parseTopoCommand(const std::vector<std::string>& args, std::string* error);

}  // namespace psdp::tools
