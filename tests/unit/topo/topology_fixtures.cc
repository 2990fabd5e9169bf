#include "unit/topo/topology_fixtures.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "topo/topology_source.h"

namespace psdp::topo::testing {
namespace {

template <typename Device>
bool matches(const Topology& topology, const Device& device, std::string_view name) {
  if (device.name == name) return true;
  if (std::find(device.os_names.begin(), device.os_names.end(), name) != device.os_names.end()) return true;
  return device.pci >= 0 && topology.pci[device.pci].bus_id == name;
}

template <typename Device>
int findNamed(const Topology& topology, const std::vector<Device>& devices, std::string_view name) {
  for (size_t i = 0; i < devices.size(); ++i) {
    if (matches(topology, devices[i], name)) return static_cast<int>(i);
  }
  ADD_FAILURE() << "no device named " << name << " in " << topology.origin;
  return -1;
}

}  // namespace

std::string topologyFile(std::string_view relative) {
  return std::string(PSDP_TOPOLOGY_DIR) + "/" + std::string(relative);
}

Topology loadShipped(std::string_view relative) {
  Result<Topology> loaded = loadTopologyFile(topologyFile(relative));
  if (!loaded.isOk()) {
    ADD_FAILURE() << relative << ": " << loaded.status().toString();
    return Topology{};
  }
  return std::move(loaded).value();
}

int gpuNamed(const Topology& topology, std::string_view name) {
  return findNamed(topology, topology.gpus, name);
}
int nicNamed(const Topology& topology, std::string_view name) {
  return findNamed(topology, topology.nics, name);
}

PathClass gpuToGpu(const Topology& topology, std::string_view a, std::string_view b) {
  int ga = gpuNamed(topology, a);
  int gb = gpuNamed(topology, b);
  if (ga < 0 || gb < 0) return PathClass::kLoc;
  return classifyPath(topology, DeviceRef::gpu(ga), DeviceRef::gpu(gb));
}

PathClass gpuToNic(const Topology& topology, std::string_view gpu, std::string_view nic) {
  int g = gpuNamed(topology, gpu);
  int n = nicNamed(topology, nic);
  if (g < 0 || n < 0) return PathClass::kLoc;
  return classifyPath(topology, DeviceRef::gpu(g), DeviceRef::nic(n));
}

}  // namespace psdp::topo::testing
