// Shared helpers of the topology tests: the shipped machine files and lookups by device name.
#pragma once

#include <ostream>
#include <string>
#include <string_view>

#include "topo/path_class.h"
#include "topo/topology.h"

namespace psdp::topo {
// Lets gtest print "PIX" rather than a byte.
inline void PrintTo(PathClass path, std::ostream* os) {
  *os << pathClassName(path);
}
}  // namespace psdp::topo

namespace psdp::topo::testing {

// The absolute path of a file under tests/data/topologies.
std::string topologyFile(std::string_view relative);

// Loads a shipped file; records a test failure (and returns an empty model) if it does not load.
Topology loadShipped(std::string_view relative);

// A GPU or NIC by its name or any of its OS device names or its bus id; -1 (and a test failure) if absent.
int gpuNamed(const Topology& topology, std::string_view name);
int nicNamed(const Topology& topology, std::string_view name);

PathClass gpuToGpu(const Topology& topology, std::string_view a, std::string_view b);
PathClass gpuToNic(const Topology& topology, std::string_view gpu, std::string_view nic);

}  // namespace psdp::topo::testing
