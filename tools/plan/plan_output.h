// psdp-plan's output: a table for people, or JSON for scripts (--json).
#pragma once

#include <ostream>

#include "plan_options.h"
#include "plan_report.h"

namespace psdp::tools {

void printPlanText(const PlanReport& report, const PlanCommand& cmd, std::ostream& out);
void printPlanJson(const PlanReport& report, const PlanCommand& cmd, std::ostream& out);

}  // namespace psdp::tools
