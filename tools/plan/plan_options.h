// psdp-plan's command line.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plan_report.h"

namespace psdp::tools {

struct PlanCommand {
  std::string model_path;
  std::string model_name;  // empty: the file's only model
  PlanOptions plan;
  bool json = false;
  bool per_rank = false;
  bool help = false;
};

extern const char* const kPlanUsage;

// Parses argv[1..]; on a bad option returns nullopt and sets *error.
std::optional<PlanCommand> parsePlanCommand(const std::vector<std::string>& args, std::string* error);

}  // namespace psdp::tools
