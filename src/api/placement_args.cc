#include "api/placement_args.h"

#include <cstring>

namespace psdp::api {
namespace {

static_assert(static_cast<int>(topo::PathClass::kLoc) == PSDP_PATH_LOC &&
                  static_cast<int>(topo::PathClass::kNvl) == PSDP_PATH_NVL &&
                  static_cast<int>(topo::PathClass::kPix) == PSDP_PATH_PIX &&
                  static_cast<int>(topo::PathClass::kPxb) == PSDP_PATH_PXB &&
                  static_cast<int>(topo::PathClass::kPhb) == PSDP_PATH_PHB &&
                  static_cast<int>(topo::PathClass::kNode) == PSDP_PATH_NODE &&
                  static_cast<int>(topo::PathClass::kSys) == PSDP_PATH_SYS,
              "psdp_path_class_t mirrors topo::PathClass");

template <size_t N>
void copyString(const std::string& from, char (&to)[N]) {
  size_t n = std::min(from.size(), N - 1);
  std::memcpy(to, from.data(), n);
  to[n] = '\0';
}

}  // namespace

psdp_path_class_t toPublicPathClass(topo::PathClass path) {
  return static_cast<psdp_path_class_t>(path);
}

void fillPlacement(const topo::RankPlacement& placement, int ring_position, const std::string& gpu_bus_id,
                   psdp_rank_placement_t* out) {
  *out = psdp_rank_placement_t{};
  out->host = placement.host;
  out->local_index = placement.local_index;
  out->ring_position = ring_position;
  out->numa_node = placement.numa_node;
  copyString(gpu_bus_id, out->gpu_bus_id);
  copyString(placement.nic, out->nic);
  out->nic_path = toPublicPathClass(placement.nic_path);
}

}  // namespace psdp::api
