#include "topo/topology.h"

#include <fmt/format.h>

#include <algorithm>

namespace psdp::topo {
namespace {

constexpr uint16_t kVendorNvidia = 0x10de;
constexpr uint16_t kVendorAmd = 0x1002;
constexpr uint16_t kVendorMellanox = 0x15b3;
constexpr uint16_t kVendorAmazon = 0x1d0f;  // EFA
constexpr uint16_t kVendorHpe = 0x17db;     // Cray Slingshot (Cassini)

constexpr uint32_t kClassVga = 0x0300;
constexpr uint32_t kClass3d = 0x0302;
constexpr uint32_t kClassDisplayOther = 0x0380;  // AMD Instinct (MI250X) report this
constexpr uint32_t kClassInfiniband = 0x0207;

}  // namespace

std::string formatBusId(unsigned domain, unsigned bus, unsigned dev, unsigned func) {
  return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", domain, bus, dev, func);
}

bool isGpuFunction(uint32_t class_id, uint16_t vendor_id) {
  bool display = class_id == kClassVga || class_id == kClass3d || class_id == kClassDisplayOther;
  return display && (vendor_id == kVendorNvidia || vendor_id == kVendorAmd);
}

bool isFabricFunction(uint32_t class_id, uint16_t vendor_id) {
  return class_id == kClassInfiniband || vendor_id == kVendorMellanox || vendor_id == kVendorAmazon ||
         vendor_id == kVendorHpe;
}

int countNics(const Topology& topology, NicKind kind) {
  return static_cast<int>(
      std::count_if(topology.nics.begin(), topology.nics.end(), [kind](const Nic& n) { return n.kind == kind; }));
}

}  // namespace psdp::topo
