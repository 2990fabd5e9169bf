// psdp-topo's default output, for people: summary, devices, path-class matrix and legend, mapping.
#pragma once

#include <ostream>

#include "topo_report.h"

namespace psdp::tools {

void printTopoText(const TopoReport& report, std::ostream& out);

// What each path class means, best first: the legend of the text output (and of --help's reader).
struct PathLegend {
  psdp_path_class_t path;
  const char* meaning;
};
extern const PathLegend kPathLegend[7];

}  // namespace psdp::tools
