// psdp-plan: how psdp would shard a model's optimizer state, next to two baselines. Uses only the public
// header: a plan is a pure function of shapes, so no communicator or launcher is needed.
#include <iostream>
#include <string>
#include <vector>

#include "model_shapes.h"
#include "plan_options.h"
#include "plan_output.h"
#include "plan_report.h"

int main(int argc, char** argv) {
  using namespace psdp::tools;
  std::string error;
  std::optional<PlanCommand> cmd = parsePlanCommand(std::vector<std::string>(argv + 1, argv + argc), &error);
  if (!cmd) {
    std::cerr << "psdp-plan: " << error << "\n" << kPlanUsage;
    return 2;
  }
  if (cmd->help) {
    std::cout << kPlanUsage;
    return 0;
  }
  std::optional<ModelShapes> model = loadModelShapes(cmd->model_path, cmd->model_name, &error);
  if (!model) {
    std::cerr << "psdp-plan: " << error << "\n";
    return 1;
  }
  PlanReport report;
  if (!buildPlanReport(*model, cmd->plan, &report, &error)) {
    std::cerr << "psdp-plan: " << error << "\n";
    return 1;
  }
  if (cmd->json) {
    printPlanJson(report, *cmd, std::cout);
  } else {
    printPlanText(report, *cmd, std::cout);
  }
  return 0;
}
