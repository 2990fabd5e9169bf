// psdp-topo: a machine's topology as psdp sees it (devices, path classes like `nvidia-smi topo -m`) and how
// psdp maps ranks onto hosts like it. Uses only the public header, like any user.
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "topo_dot.h"
#include "topo_json.h"
#include "topo_options.h"
#include "topo_report.h"
#include "topo_text.h"

int main(int argc, char** argv) {
  using namespace psdp::tools;
  std::string error;
  std::optional<TopoCommand> cmd = parseTopoCommand(std::vector<std::string>(argv + 1, argv + argc), &error);
  if (!cmd) {
    std::cerr << "psdp-topo: " << error << "\n" << kTopoUsage;
    return 2;
  }
  if (cmd->help) {
    std::cout << kTopoUsage;
    return 0;
  }
  TopoReport report;
  bool usage_error = false;
  if (!buildTopoReport(*cmd, &report, &error, &usage_error)) {
    std::cerr << "psdp-topo: " << error << "\n";
    return usage_error ? 2 : 1;
  }
  switch (cmd->format) {
    case TopoFormat::kText: printTopoText(report, std::cout); break;
    case TopoFormat::kJson: printTopoJson(report, std::cout); break;
    case TopoFormat::kDot: printTopoDot(report, std::cout); break;
  }
  return std::cout.good() ? 0 : 1;
}
