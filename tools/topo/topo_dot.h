// psdp-topo --dot: the devices as a graphviz digraph. Every pair would be a complete graph (120 edges for 16
// GPUs), so only the informative edges are drawn: GPU pairs that meet below the CPU (NVL, PIX, PXB), with an
// all-to-all NVLink group drawn as one hub, and each GPU's edges to its closest NICs; devices are clustered
// by NUMA node, so paths through the CPU (PHB, NODE, SYS) read off the clusters.
#pragma once

#include <ostream>

#include "topo_report.h"

namespace psdp::tools {

void printTopoDot(const TopoReport& report, std::ostream& out);

}  // namespace psdp::tools
