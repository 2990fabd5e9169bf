// psdp-topo --json: the text output's content as one JSON object, for scripts (keys in kTopoUsage).
#pragma once

#include <ostream>

#include "topo_report.h"

namespace psdp::tools {

void printTopoJson(const TopoReport& report, std::ostream& out);

}  // namespace psdp::tools
